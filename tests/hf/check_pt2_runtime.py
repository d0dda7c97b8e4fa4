#!/usr/bin/env python3
"""--ablation and --dtype on exported programs of Hugging Face architectures.

    check_pt2_runtime.py HEADSCAN WORKDIR [ARCH ...]   (default: llama qwen2 gpt2)

An exported program runs under NativeRT, which runs in inference mode and in the dtype it was
exported in; headscan runs it in its own interpreter of the program for --ablation (the gradient
in the head scales) and for another --dtype (analyzer/model/exported/program_interpreter.h). For
each architecture of hf_models.PT2_BY_NAME (randomly initialized, saved with save_pretrained, no
network), in float32 on the CPU:

  1. `headscan export MODEL_DIR MODEL.pt2` (headscan's attention op) and `scripts/export_hf.py
     MODEL_DIR MODEL.pt` (a TorchScript trace with eager attention) of the same model;
  2. `headscan MODEL.pt2 CORPUS --ablation` and the same on MODEL.pt, sequences of about 40 and
     300 tokens (--max-length 300): heads.json's "ablation" (losses, the pruning curve, circuits)
     and every head's scores within 1e-4;
  3. `headscan MODEL.pt2 CORPUS --dtype bfloat16`: model.dtype "bfloat16", and every head's scores
     within 1e-2 of the float32 run of step 2 (TorchScript's tolerance for --dtype,
     tests/test_modern_exports.cpp; times the score where it is above 1: mean_distance counts
     tokens, 60 on these sequences), but the argmax ones (argmax_rate, rare_word), which a
     random model's nearly uniform rows turn over (as that test skips them for a bfloat16 trace).

Exit 0 when every architecture passes, 1 otherwise (each failure printed).
"""

import json
import math
import os
import shutil
import subprocess
import sys
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from hf_models import CORPUS, PT2_BY_NAME, build_model_dir  # noqa: E402 (tests/hf/)

ROOT = os.path.dirname(os.path.dirname(HERE))
ABLATION_TOLERANCE = 1e-4
DTYPE_TOLERANCE = 1e-2
ARGMAX_SCORES = {"argmax_rate", "rare_word"}
MAX_LENGTH = "300"
# A line of about 40 tokens, the whole corpus twice as one line (a window of 300 tokens and the
# rest) and a short one (as check_export_pt2.py).
RUNTIME_CORPUS = [CORPUS[1] + " " + CORPUS[5], " ".join(CORPUS * 2), CORPUS[3]]
QUICK = ["--max-length", MAX_LENGTH, "--parser", "none", "--no-html", "--no-plots", "-q", "--threads", "1",
         "--force"]


def run(command, what):
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise AssertionError(f"{what}: exit {result.returncode}\n{' '.join(command)}\n{result.stderr[-3000:]}")
    return result


def report(headscan, model, corpus, out, options):
    run([headscan, model, corpus, "-o", out, *QUICK, *options], f"headscan {os.path.basename(model)} {options}")
    with open(os.path.join(out, "heads.json"), encoding="utf-8") as f:
        return json.load(f)


def differences(a, b, tolerance, where, skip=frozenset(), relative=False):
    """Each place where `a` and `b` differ: numbers by more than `tolerance` (`relative`: times the
    larger of 1 and |b|), anything else at all."""
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        bound = tolerance * max(1.0, abs(b)) if relative else tolerance
        if not (math.isfinite(a) and math.isfinite(b)) or abs(a - b) > bound:
            return [f"{where}: {a} != {b}"]
        return []
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return [f"{where}: keys {sorted(set(a) ^ set(b))} in one only"]
        return [d for key in a if key not in skip
                for d in differences(a[key], b[key], tolerance, f"{where}.{key}", skip, relative)]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{where}: {len(a)} items != {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b))
                for d in differences(x, y, tolerance, f"{where}[{i}]", skip, relative)]
    return [] if a == b else [f"{where}: {a!r} != {b!r}"]


def head_scores(document):
    return {(h["layer"], h["head"]): h["scores"] for h in document["heads"]}


def check(arch, headscan, corpus, work):
    folder = os.path.join(work, arch["name"])
    model_dir = os.path.join(folder, "model")
    archive = os.path.join(folder, "model.pt2")
    trace = os.path.join(folder, "model.pt")
    build_model_dir(arch, model_dir)
    run([headscan, "export", model_dir, archive, *arch["options"]], "headscan export")
    run([sys.executable, os.path.join(ROOT, "scripts", "export_hf.py"), model_dir, trace], "export_hf.py")

    exported = report(headscan, archive, corpus, os.path.join(folder, "pt2-ablation"), ["--ablation"])
    traced = report(headscan, trace, corpus, os.path.join(folder, "pt-ablation"), ["--ablation"])
    assert exported["model"]["format"] == "exported program" and traced["model"]["format"] == "torchscript"
    found = differences(exported["ablation"], traced["ablation"], ABLATION_TOLERANCE, "ablation")
    scores_a, scores_b = head_scores(exported), head_scores(traced)
    assert scores_a.keys() == scores_b.keys(), f"heads {sorted(scores_a)[:6]}... != {sorted(scores_b)[:6]}..."
    for head in scores_a:
        found += differences(scores_a[head], scores_b[head], ABLATION_TOLERANCE, f"L{head[0]}H{head[1]}")
    assert not found, f"--ablation: the .pt2 and the trace differ:\n  " + "\n  ".join(found[:12])
    assert any(s["importance"] > 1e-6 for s in scores_a.values()), "every head's importance is 0"

    cast = report(headscan, archive, corpus, os.path.join(folder, "pt2-bfloat16"), ["--dtype", "bfloat16"])
    assert cast["model"]["dtype"] == "bfloat16", f"model.dtype {cast['model']['dtype']}"
    found = []
    for head, scores in head_scores(cast).items():
        reference = {key: scores_a[head][key] for key in scores if key in scores_a[head]}  # no causal scores
        found += differences(scores, reference, DTYPE_TOLERANCE, f"L{head[0]}H{head[1]}", ARGMAX_SCORES,
                             relative=True)
    assert not found, f"--dtype bfloat16 against float32:\n  " + "\n  ".join(found[:12])


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    headscan, work = os.path.abspath(argv[1]), os.path.abspath(argv[2])
    names = argv[3:] or ["llama", "qwen2", "gpt2"]
    unknown = [n for n in names if n not in PT2_BY_NAME]
    if unknown:
        print(f"unknown architectures {unknown}; known: {', '.join(PT2_BY_NAME)}", file=sys.stderr)
        return 2
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    corpus = os.path.join(work, "corpus.txt")
    with open(corpus, "w", encoding="utf-8") as f:
        f.write("\n".join(RUNTIME_CORPUS) + "\n")
    failures = 0
    for name in names:
        began = time.time()
        try:
            check(PT2_BY_NAME[name], headscan, corpus, work)
            print(f"ok {name}: --ablation as the trace within {ABLATION_TOLERANCE}, --dtype bfloat16 within "
                  f"{DTYPE_TOLERANCE} ({time.time() - began:.0f} s)")
        except Exception as e:  # noqa: BLE001 - reported per architecture
            failures += 1
            print(f"FAIL {name}: {type(e).__name__}: {e}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
