#!/usr/bin/env python3
"""Hybrids' exported programs against transformers' eager model at lengths within one chunk, at a
chunk's edges and far beyond.

    check_hybrid_lengths.py HEADSCAN WORKDIR [--lengths 16,63,...] [ARCH ...]
        (default: 16, 63, 64, 65 and 200 tokens; every hybrid of HYBRIDS)

For each hybrid (Qwen3.5, Qwen3-Next, OLMo hybrid, Jamba, Granite 4 hybrid, Nemotron-H, Falcon-H1:
hf_models.PT2_BY_NAME's configs with positions for 4,096 tokens), with no network:

  1. `headscan export MODEL_DIR MODEL.pt2` at its default length (the model's 4,096 positions), in
     this process with this build's Python package and C++ core;
  2. the program's linear-attention and state-space layers call headscan's operators
     (headscan::gated_delta_rule, ssd_scan, selective_scan), whose kernels here are the C++ ones of
     headscan._core (checked); headscan::attention's kernel is replaced by a Python one that also
     records its probabilities (ops.attention_math);
  3. at each length, one sequence of random ids: the program's logits and each attention layer's
     probabilities against transformers' model loaded from MODEL_DIR with eager attention (its
     experts as batched_mm, as the program computes them), output_attentions=True: logits within
     1e-4 (relative to their scale), attention within 1e-5 (measured on this project's machine:
     equal bit for bit but Qwen3-Next's, within 3e-7).

Exit 0 when every architecture passes at every length, 1 otherwise (each failure printed).
"""

import argparse
import contextlib
import io
import os
import shutil
import sys
import time
import traceback
import warnings

import torch

sys.dont_write_bytecode = True

from hf_models import PT2_BY_NAME, build_model_dir  # noqa: E402 (tests/hf/)

HYBRIDS = ["qwen3_5", "qwen3_next", "olmo_hybrid", "jamba", "granitemoehybrid", "nemotron_h", "falcon_h1"]
POSITIONS = 4096
LENGTHS = (16, 63, 64, 65, 200)
LOGITS_TOLERANCE = 1e-4
ATTENTION_TOLERANCE = 1e-5
RECORDED = []  # the probabilities headscan::attention computes, in the order it runs


def with_positions(arch):
    """The architecture with positions (config and tokenizer) for POSITIONS tokens."""
    config = arch["config"]

    def longer():
        name, fields = config()
        return name, dict(fields, max_position_embeddings=POSITIONS)

    return dict(arch, config=longer, positions=POSITIONS)


def load_core(headscan):
    """headscan's package and C++ core of the build of HEADSCAN; headscan::attention's kernel
    replaced by one that records its probabilities."""
    sys.path.insert(0, os.path.join(os.path.dirname(headscan), "python"))
    import headscan as package  # noqa: F401 - loads headscan._core
    from headscan._export import mixer_ops, ops

    for name in mixer_ops.SCHEMAS:
        dump = torch._C._dispatch_dump(f"headscan::{name}")
        assert "sequence_mixers.cpp" in dump, f"headscan::{name} has no C++ kernel of headscan's:\n{dump}"

    def attention(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, layer):
        output, probs = ops.attention_math(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
        RECORDED.append(probs.detach().clone())
        return output

    library = torch.library.Library("headscan", "IMPL")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "overriding a previously registered kernel"
        library.impl("attention", attention, "CompositeExplicitAutograd")
    return library


def export(model_dir, archive):
    from headscan._export.command import main as export_main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = export_main([model_dir, archive])
    assert status == 0, f"headscan export exit {status}:\n{err.getvalue()[-3000:]}"
    return out.getvalue()


MIXERS = ("gated_delta_rule", "ssd_scan", "selective_scan")


def mixer_calls(program):
    """The names of headscan's sequence-mixer operators the program calls."""
    return sorted({node.target.name().split("::")[-1] for node in program.graph.nodes
                   if node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload)
                   and node.target.namespace == "headscan" and node.target.name().split("::")[-1] in MIXERS})


def relative(found, expected):
    return ((found - expected).abs().max() / expected.abs().max().clamp(min=1e-30)).item()


def check(arch, headscan, work, lengths):
    import transformers
    from torch.export.pt2_archive._package import load_pt2

    folder = os.path.join(work, arch["name"])
    shutil.rmtree(folder, ignore_errors=True)
    model_dir, archive = os.path.join(folder, "model"), os.path.join(folder, "model.pt2")
    build_model_dir(arch, model_dir)
    export(model_dir, archive)
    program = load_pt2(archive).exported_programs["model"]
    mixers = mixer_calls(program)
    assert mixers, "the program calls none of headscan's sequence-mixer operators"
    module = program.module()
    config = transformers.AutoConfig.from_pretrained(model_dir)
    model = getattr(transformers, config.architectures[0]).from_pretrained(
        model_dir, attn_implementation="eager", dtype=torch.float32).eval()
    with contextlib.suppress(Exception):  # a model without experts
        model.set_experts_implementation("batched_mm")  # as the program computes them (exporter.py)
    generator = torch.Generator().manual_seed(0)
    worst = {"logits": 0.0, "attention": 0.0}
    for length in lengths:
        ids = torch.randint(0, config.vocab_size, (1, length), generator=generator)
        mask = torch.ones_like(ids)
        RECORDED.clear()
        with torch.no_grad():
            logits = module(ids, mask, torch.arange(length))  # logits_rows: every row
            expected = model(input_ids=ids, attention_mask=mask, output_attentions=True, use_cache=False)
        maps = [a for a in expected.attentions if a is not None]
        assert logits.shape == expected.logits.shape, f"{length} tokens: logits {logits.shape}, expected " \
                                                      f"{expected.logits.shape}"
        difference = relative(logits, expected.logits)
        assert difference <= LOGITS_TOLERANCE, f"{length} tokens: logits differ by {difference:.2e} (relative)"
        worst["logits"] = max(worst["logits"], difference)
        assert len(RECORDED) == len(maps), f"{length} tokens: {len(RECORDED)} attention maps, expected {len(maps)}"
        for layer, (found, want) in enumerate(zip(RECORDED, maps)):
            assert found.shape == want.shape, f"{length} tokens: map {layer} is {found.shape}, expected {want.shape}"
            difference = (found - want).abs().max().item()
            assert difference <= ATTENTION_TOLERANCE, f"{length} tokens: attention map {layer} differs by " \
                                                      f"{difference:.2e}"
            worst["attention"] = max(worst["attention"], difference)
    return worst, mixers


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("headscan")
    parser.add_argument("work")
    parser.add_argument("--lengths", default=",".join(map(str, LENGTHS)))
    parser.add_argument("architectures", nargs="*")
    args = parser.parse_intermixed_args(argv[1:])
    unknown = [name for name in args.architectures if name not in HYBRIDS]
    if unknown:
        parser.error(f"unknown architectures {unknown}; known: {', '.join(HYBRIDS)}")
    lengths = [int(n) for n in args.lengths.split(",")]
    work = os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)
    torch.set_num_threads(1)
    keep = load_core(os.path.abspath(args.headscan))  # noqa: F841 - the override lives while it does
    start = time.time()
    failed = []
    for name in args.architectures or HYBRIDS:
        began = time.time()
        try:
            worst, mixers = check(with_positions(PT2_BY_NAME[name]), args.headscan, work, lengths)
            detail = (f"max |difference| logits {worst['logits']:.1e} (relative), attention {worst['attention']:.1e}; "
                      f"headscan::{', '.join(mixers)}")
            status = "ok"
        except Exception as e:  # noqa: BLE001 - reported per architecture
            status, detail = "FAIL", f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}"
            failed.append(name)
        print(f"{name:17s} {status:4s} {detail} ({time.time() - began:.0f} s)", flush=True)
    print(f"{len(args.architectures or HYBRIDS)} architectures at {', '.join(map(str, lengths))} tokens "
          f"in {time.time() - start:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
