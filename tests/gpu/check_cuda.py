#!/usr/bin/env python3
"""headscan on a GPU against headscan on the CPU (issue: statistics where the attention is).

    check_cuda.py HEADSCAN FIXTURE_DIR WORK_DIR COMPARE_HEADS

For every fixture model with planted heads (and the random-weight and --ablation ones, and the
exported programs exported on the CPU, which --device cuda moves), runs the
same analysis with --device cpu and --device cuda and requires heads.json to agree within 1e-5 in
every score, with the same labels (tests/fixtures/compare_heads.py; `run` is not compared). On the
GPU, a corpus cut in shards and merged must equal the single GPU run exactly, and heads.json's run
must name the GPU and its peak memory. Exits 77 (ctest: skipped) where LibTorch sees no GPU.
Standard library only.
"""

import json
import os
import random
import shutil
import subprocess
import sys

TOLERANCE = "1e-5"
SKIPPED = 77


def run(command, what):
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        print(f"FAIL {what}: exit {result.returncode}\n{' '.join(command)}\n{result.stderr}", file=sys.stderr)
        sys.exit(1)
    return result


def word_corpus(path):
    rng = random.Random(7)
    with open(path, "w") as f:
        for _ in range(40):
            f.write(" ".join(f"w{rng.randint(3, 63)}" for _ in range(rng.randint(3, 90))) + "\n")


def main(argv):
    headscan, fixtures, work, compare = argv[1:5]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    words = os.path.join(work, "words.txt")
    word_corpus(words)
    quick = ["--no-html", "--no-plots", "-q", "--force"]

    probe = subprocess.run([headscan, os.path.join(fixtures, "gpt2.pt"), words, "-o", os.path.join(work, "probe"),
                            "--device", "cuda", "--max-sequences", "1", "--parser", "none"] + quick, capture_output=True, text=True)
    if probe.returncode == 2 and ("sees no GPU" in probe.stderr or "without CUDA" in probe.stderr):
        print("skipped: " + probe.stderr.strip())
        return SKIPPED
    if probe.returncode != 0:
        print(f"FAIL headscan --device cuda: exit {probe.returncode}\n{probe.stderr}", file=sys.stderr)
        return 1

    no_parser = ["--parser", "none"]
    cases = [(name, f"{name}.pt", words, no_parser)
             for name in ["gpt2", "gpt2_traced", "gpt2_causal_meta", "llama", "bert", "bmm", "extra_softmax", "hf_returns"]]
    cases.append(("gpt2_max16", "gpt2.pt", words, no_parser + ["--max-length", "16", "--batch-size", "3"]))
    for name in ["induction_circuit", "induction_short", "bidirectional_circuit", "rare_word"]:
        cases.append((name, f"{name}.pt", os.path.join(fixtures, "rare_word_corpus.txt"), no_parser))
    cases += [
        ("syntax_gold", "syntax.pt", os.path.join(fixtures, "syntax_gold.conllu"), []),
        ("syntax_text", "syntax.pt", os.path.join(fixtures, "syntax_text.txt"), []),
        ("random_gpt2", "random_gpt2.pt", os.path.join(fixtures, "random_corpus.txt"), no_parser),
        ("random_bert", "random_bert.pt", os.path.join(fixtures, "random_corpus.txt"), no_parser),
        ("ablation_lm", "ablation_lm.pt", os.path.join(fixtures, "ablation_corpus.txt"), no_parser + ["--ablation"]),
        ("ablation_mlm", "ablation_mlm.pt", os.path.join(fixtures, "ablation_corpus.txt"), no_parser + ["--ablation"]),
    ]
    # Exported programs written in float32 on the CPU (make_pt2_fixtures.py), moved to the GPU by
    # headscan's interpreter of the program, plain and with --ablation.
    for name in ["pt2_eager", "pt2_sdpa", "pt2_rows"]:
        cases.append((name + "_exported", f"{name}.pt2", words, no_parser))
        cases.append((name + "_exported_ablation", f"{name}.pt2", words, no_parser + ["--ablation"]))
    # The long-context head types (make_long_context_models.py), where the fixtures include them.
    long_corpus = os.path.join(fixtures, "long_corpus.txt")
    if os.path.exists(long_corpus):
        cases += [("needle_copy", "needle_copy.pt", long_corpus, no_parser),
                  ("window_lm", "window_lm.pt", long_corpus, no_parser + ["--ablation"]),
                  ("separator", "separator.pt", long_corpus, no_parser)]
    failures = 0
    for name, model, corpus, options in cases:
        model_path = os.path.join(fixtures, model)
        if not os.path.exists(model_path) or not os.path.exists(corpus):
            print(f"FAIL {name}: {model_path} or {corpus} is missing", file=sys.stderr)
            failures += 1
            continue
        reports = {}
        for device in ["cpu", "cuda"]:
            out = os.path.join(work, f"{name}-{device}")
            command = [headscan, model_path, corpus, "-o", out, "--device", device] + options + quick
            result = subprocess.run(command, capture_output=True, text=True)
            if result.returncode == 2 and "link-grammar's English dictionary" in result.stderr:
                break  # a GPU machine without link-grammar's data (scripts/gpu/build.sh)
            if result.returncode != 0:
                print(f"FAIL {name} on {device}: exit {result.returncode}\n{' '.join(command)}\n{result.stderr}",
                      file=sys.stderr)
                sys.exit(1)
            reports[device] = os.path.join(out, "heads.json")
        if len(reports) < 2:
            print(f"skipped {name}: link-grammar's English dictionary is not installed here")
            continue
        run_section = json.load(open(reports["cuda"]))["run"]
        if not run_section.get("device", "").startswith("cuda") or run_section.get("peak_device_memory_bytes", 0) <= 0:
            print(f"FAIL {name}: heads.json's run on the GPU says {run_section}", file=sys.stderr)
            failures += 1
        compared = subprocess.run([sys.executable, compare, reports["cpu"], reports["cuda"], "--tolerance", TOLERANCE],
                                  capture_output=True, text=True)
        if compared.returncode != 0:
            print(f"FAIL {name}: CPU and CUDA differ\n{compared.stdout}{compared.stderr}", file=sys.stderr)
            failures += 1
        else:
            print(f"ok {name}: CPU and CUDA agree within {TOLERANCE}")

    # Shards on the GPU merge to exactly the single GPU run.
    single = os.path.join(work, "syntax_gold-cuda", "heads.json")
    shards = []
    for index in range(3):
        out = os.path.join(work, f"shard{index}")
        run([headscan, os.path.join(fixtures, "syntax.pt"), os.path.join(fixtures, "syntax_gold.conllu"), "-o", out,
             "--device", "cuda", "--shard", f"{index}/3", "-q", "--force"], f"shard {index}/3 on cuda")
        shards.append(out)
    merged = os.path.join(work, "merged")
    run([headscan, "merge"] + shards + ["-o", merged, "--no-html", "--no-plots", "-q", "--force"], "merge")
    compared = subprocess.run([sys.executable, compare, single, os.path.join(merged, "heads.json"), "--tolerance", "0"],
                              capture_output=True, text=True)
    if compared.returncode != 0:
        print(f"FAIL shards on cuda: the merge differs from the single run\n{compared.stdout}", file=sys.stderr)
        failures += 1
    else:
        print("ok shards on cuda: merged equals the single run exactly")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
