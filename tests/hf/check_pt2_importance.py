#!/usr/bin/env python3
"""--ablation on exported programs through headscan's operators, against transformers' autograd.

    check_pt2_importance.py HEADSCAN WORKDIR [ARCH ...]   (default: every one of CASES)

`--ablation` on a .pt2 takes the gradient of the loss in the head scales through the program's
operators: headscan::attention.windowed (sliding windows), the hybrids' sequence mixers
(headscan::gated_delta_rule, ssd_scan, selective_scan) when an attention layer comes before them,
and DeepSeek-V3.2's headscan::index_topk. For each case (a randomly initialized model of
hf_models.PT2_BY_NAME with the layer order of CASES, no network):

  1. `headscan export MODEL_DIR MODEL.pt2`, then `headscan MODEL.pt2 CORPUS --ablation
     --ablation-sequences 4` on four short lines;
  2. the reference: transformers' model (eager attention, float32) on the same four sequences
     (`headscan tokenize`), each head's output scaled by ξ_h before the attention's o_proj (the same
     as scaling its probabilities: (ξ·A)·V = ξ·(A·V)), L_x the mean next-token cross-entropy;
     (with the architecture's run_options of hf_models: DeepSeek-V3.2 one sequence per call, as its
     indexer's ties among equal scores depend on the padded width);
  3. every head's `importance` (mean_x |∂L_x/∂ξ_h| at ξ = 1) and `ablation_loss` (mean_x
     L_x(ξ_h = 0) − L_x) within TOLERANCE of the reference.

Exit 0 when every case passes, 1 otherwise (each failure printed).
"""

import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import time

import torch

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from hf_models import CORPUS, PT2_BY_NAME, build_model_dir  # noqa: E402 (tests/hf/)

TOLERANCE = 1e-5
SEQUENCES = 4
# name: (architecture, config fields over its own): an attention layer first, so that its heads'
# gradient runs through the layer after it.
CASES = {
    "jamba": ("jamba", {"attn_layer_offset": 0}),  # Mamba's selective scan after attention
    "qwen3_5": ("qwen3_5", {"layer_types": ["full_attention", "linear_attention"]}),  # the gated delta rule
    "granitemoehybrid": ("granitemoehybrid", {"layer_types": ["full_attention", "linear_attention"]}),  # SSD scan
    "gemma3": ("gemma3", {}),  # a sliding window, then a full layer
    "deepseek_v32": ("deepseek_v32", {}),  # the indexer's top-k
}


def run(command):
    process = subprocess.run(command, capture_output=True, text=True,
                             env=dict(os.environ, OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1"))
    if process.returncode != 0:
        raise AssertionError(f"{' '.join(command[:3])}... exit {process.returncode}: {process.stderr[-3000:]}")
    return process.stdout


def case_arch(name):
    base, fields = CASES[name]
    arch = dict(PT2_BY_NAME[base])
    config = arch["config"]

    def patched():
        config_name, stored = config()
        return config_name, dict(stored, **fields)

    arch["config"] = patched
    return arch


def reference(model_dir, records):
    """{(layer, head): (importance, ablation_loss)} of transformers' model on `records`."""
    import transformers

    model = transformers.AutoModelForCausalLM.from_pretrained(model_dir, attn_implementation="eager",
                                                              dtype=torch.float32).eval()
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    heads = model.config.num_attention_heads
    attentions = [(index, layer.self_attn) for index, layer in enumerate(model.model.layers)
                  if getattr(layer, "self_attn", None) is not None]
    scales = {}

    def scaled(index):
        def hook(_, args):
            x = args[0]
            batch, tokens, width = x.shape
            return ((x.view(batch, tokens, heads, width // heads) * scales[index].view(1, 1, heads, 1))
                    .view(batch, tokens, width),)
        return hook

    hooks = [attention.o_proj.register_forward_pre_hook(scaled(index)) for index, attention in attentions]

    def loss(ids):
        logits = model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=False).logits
        return torch.nn.functional.cross_entropy(logits[0, :-1].float(), ids[0, 1:])

    sums = {}
    try:
        for record in records:
            ids = torch.tensor([record["ids"]])
            for index, _ in attentions:
                scales[index] = torch.ones(heads, requires_grad=True)
            base = loss(ids)
            base.backward()
            for index, _ in attentions:
                gradient = scales[index].grad
                for head in range(heads):
                    with torch.no_grad():
                        scales[index] = torch.ones(heads)
                        scales[index][head] = 0.0
                        removed = loss(ids).item()
                        scales[index] = torch.ones(heads)
                    entry = sums.setdefault((index, head), [0.0, 0.0])
                    entry[0] += abs(gradient[head].item())
                    entry[1] += removed - base.item()
                scales[index] = torch.ones(heads, requires_grad=True)
    finally:
        for hook in hooks:
            hook.remove()
    return {key: (importance / len(records), change / len(records)) for key, (importance, change) in sums.items()}


def paths(name, work):
    folder = os.path.join(work, name)
    return folder, os.path.join(folder, "model"), os.path.join(folder, "model.pt2")


def check(name, headscan, work):
    folder, model_dir, archive = paths(name, work)
    run([headscan, "export", model_dir, archive])
    corpus = os.path.join(folder, "corpus.txt")
    with open(corpus, "w", encoding="utf-8") as f:
        f.write("\n".join(CORPUS[:SEQUENCES]) + "\n")
    report = os.path.join(folder, "report")
    run([headscan, archive, corpus, "-o", report, "--ablation", "--ablation-sequences", str(SEQUENCES),
         "--probes", "none", "--parser", "none", "--no-html", "--no-plots", "-q", "--threads", "1",
         *PT2_BY_NAME[CASES[name][0]]["run_options"]])
    with open(os.path.join(report, "heads.json"), encoding="utf-8") as f:
        heads = json.load(f)["heads"]
    records = [json.loads(line) for line in run([headscan, "tokenize", archive, corpus]).splitlines()
               if line.strip()][:SEQUENCES]
    want = reference(model_dir, records)
    assert sorted(want) == sorted((h["layer"], h["head"]) for h in heads), \
        f"heads {[(h['layer'], h['head']) for h in heads]}, transformers' attention heads {sorted(want)}"
    worst = [0.0, 0.0]
    problems = []
    for head in heads:
        key = (head["layer"], head["head"])
        for i, score in enumerate(("importance", "ablation_loss")):
            difference = abs(head["scores"][score] - want[key][i])
            worst[i] = max(worst[i], difference)
            if difference > TOLERANCE:
                problems.append(f"L{key[0]}H{key[1]} {score}: headscan {head['scores'][score]:.7f}, "
                                f"transformers {want[key][i]:.7f}")
    assert not problems, f"{len(problems)} scores differ by more than {TOLERANCE}:\n  " + "\n  ".join(problems[:12])
    assert max(want[key][0] for key in want) > 1e-3, "every head's importance is nearly 0: a weak test"
    return worst


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    headscan, work = os.path.abspath(argv[1]), os.path.abspath(argv[2])
    names = argv[3:] or list(CASES)
    unknown = [n for n in names if n not in CASES]
    if unknown:
        print(f"unknown cases {unknown}; known: {', '.join(CASES)}", file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    start = time.time()
    for name in names:  # one at a time: transformers' lazy imports are not thread-safe
        folder, model_dir, _ = paths(name, work)
        shutil.rmtree(folder, ignore_errors=True)
        build_model_dir(case_arch(name), model_dir)

    def outcome(name):
        began = time.time()
        try:
            importance, ablation = check(name, headscan, work)
        except Exception as e:  # noqa: BLE001 - reported per case
            return "FAIL", f"{type(e).__name__}: {e}"
        return "ok", f"max |difference| importance {importance:.1e}, ablation_loss {ablation:.1e} " \
                     f"({time.time() - began:.0f} s)"

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        results = dict(zip(names, pool.map(outcome, names)))
    for name in names:
        print(f"{name:17s} {results[name][0]:4s} {results[name][1]}")
    print(f"{len(names)} cases in {time.time() - start:.0f} s")
    return 1 if any(status != "ok" for status, _ in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
