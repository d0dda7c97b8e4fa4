#!/usr/bin/env python3
"""headscan at long context on the CPU: peak memory and time against T, headscan's blocked attention
op against the model's own fused SDPA forward of the same archive.

    .venv/bin/python bench/long_context.py [--lengths 1024,2048,4096,8192,16384] [--repeats 3]
                                           [--threads 2] [--build build] [--work DIR] [--attention-block auto]

The model: transformers' LlamaModel with random weights (seed 0), 4 layers, hidden 256, 8 heads of
32 dims, 2 key/value heads, MLP 688, 1,024 words, positions 16,384, SDPA attention, traced with
torch.jit.trace into a TorchScript archive whose forward(input_ids) returns the last hidden state.
It is traced as transformers runs it unpadded: each layer one aten::scaled_dot_product_attention
with is_causal=True and no mask tensor (under tracing transformers would materialise a [T, T]
mask, so its check that allows the skip is answered as for an unpadded batch). Without a language-model
head the model has no logits, so headscan runs no needle probes: both sides compute the same
forward over the same sequence. The archive is checked equal to the untraced model at two lengths.

For each T, one line of T - 1 random words (BOS makes T tokens), batch size 1, the same threads,
and alternating runs (--repeats of each side), each its own process whose peak RSS is read from
wait4(2):
  bare      build/bench/headscan_bench_forward: torch::jit::load and forward, no rewrite, so LibTorch's
            fused SDPA (flash attention on the CPU) runs; forward_s is the time inside the forward call,
            the median of 3 calls up to 4,096 tokens (the first call of a shape pays TorchScript's
            profiling run, about 0.5 s here), one call above.
  headscan  build/headscan -q --no-html --no-plots --parser none --attention-block BLOCK: every SDPA
            rewritten to headscan's attention op in query blocks of Q rows (heads.json run says Q)
            with every statistic; corpus_s is heads.json's run.phases.corpus (that forward with its
            statistics), wall_s the whole process (loading, the shape probe, the probe sequences,
            the example sequence, the report).
Medians are printed per T with the goals of the long-context work:
  memory  headscan's peak RSS <= 1.1 x (the bare forward's peak RSS + one block, B·H·Q·T·4 bytes:
          run.attention.largest_block of heads.json);
  time    at 4,096 tokens, headscan's corpus_s <= 1.3 x the bare forward_s
and 'met' or 'NOT met' for each. Exit status 0 when every goal measured is met, 3 when one is not.
"""
import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
WORDS = 1024 - 1  # <s> is id 0
LAYERS, HIDDEN, HEADS, KV_HEADS, MLP, POSITIONS = 4, 256, 8, 2, 688, 16384
# The bare forward's time: the median of 3 forward calls in one process up to 4,096 tokens, where the
# first call of a shape (TorchScript's profiling run) costs a noticeable share; one call above.
BARE_PASSES, BARE_PASSES_ABOVE, BARE_PASSES_UP_TO = 3, 1, 4096
MEMORY_GOAL, TIME_GOAL, TIME_GOAL_LENGTH = 1.10, 1.30, 4096


def tokenizer_json():
    vocab = {"<s>": 0}
    vocab.update({f"w{i}": i + 1 for i in range(WORDS)})
    added = [{"id": 0, "content": "<s>", "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True}]
    return json.dumps({"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
                       "normalizer": None, "pre_tokenizer": {"type": "WhitespaceSplit"}, "post_processor": None,
                       "decoder": None, "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "<s>"}})


def build_model(path):
    import torch
    import transformers.masking_utils as masking
    from transformers import LlamaConfig, LlamaModel

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=WORDS + 1, hidden_size=HIDDEN, intermediate_size=MLP, num_hidden_layers=LAYERS,
                         num_attention_heads=HEADS, num_key_value_heads=KV_HEADS, max_position_embeddings=POSITIONS,
                         attn_implementation="sdpa")
    model = LlamaModel(config).eval()

    class HiddenStates(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids):
            return self.inner(input_ids=input_ids, use_cache=False).last_hidden_state

    wrapper = HiddenStates(model).eval()
    # What transformers decides from the data when it is not tracing, answered for an unpadded batch
    # of one sequence: its positions are not packed sequences, and SDPA's is_causal replaces a mask.
    decided = {"_ignore_causal_mask_sdpa": lambda *args, **kwargs: True,
               "find_packed_sequence_indices": lambda *args, **kwargs: None}
    originals = {name: getattr(masking, name) for name in decided}
    for name, answer in decided.items():
        setattr(masking, name, answer)
    try:
        with torch.no_grad():
            traced = torch.jit.trace(wrapper, (torch.randint(1, WORDS + 1, (2, 10)),), check_trace=False)
    finally:
        for name, original in originals.items():
            setattr(masking, name, original)
    graph = traced.inlined_graph  # held: its nodes live as long as it does
    calls = graph.findAllNodes("aten::scaled_dot_product_attention")
    # (query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa): no mask, is_causal.
    masks = [call.inputsAt(3).type().kind() for call in calls]
    causal = [call.inputsAt(5).toIValue() for call in calls]
    if len(calls) != LAYERS or masks != ["NoneType"] * LAYERS or causal != [True] * LAYERS:
        sys.exit(f"the trace has {len(calls)} aten::scaled_dot_product_attention calls (masks {masks}, is_causal "
                 f"{causal}), expected {LAYERS} with no mask and is_causal")
    for length in (7, 300):
        ids = torch.randint(1, WORDS + 1, (1, length))
        with torch.no_grad():
            difference = (traced(ids) - wrapper(ids)).abs().max().item()
        if difference > 1e-5:
            sys.exit(f"the trace differs from the model by {difference} at {length} tokens")
    meta = {"name": "llama-long-bench", "bos_token": "<s>", "max_length": POSITIONS, "causal": True,
            "n_kv_heads": KV_HEADS}
    torch.jit.save(traced, path, _extra_files={"tokenizer.json": tokenizer_json(), "headscan.json": json.dumps(meta)})


def write_corpus(path, length):
    rng = random.Random(length)
    with open(path, "w", encoding="utf-8") as f:
        f.write(" ".join(f"w{rng.randrange(WORDS)}" for _ in range(length - 1)) + "\n")


def measured(command):
    """(wall seconds, peak RSS bytes, stdout) of one process; exits on failure."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        begin = time.monotonic()
        process = subprocess.Popen(command, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(process.pid, 0)  # this child's own peak RSS, in KiB
        wall = time.monotonic() - begin
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if process.returncode != 0:
            sys.exit(f"{' '.join(command)} exited {process.returncode}:\n{err.read()}")
        return wall, usage.ru_maxrss * 1024, out.read()


def run_bare(args, model, corpus, length):
    _, peak, out = measured([os.path.join(args.build, "bench", "headscan_bench_forward"), model, corpus,
                                "--threads", str(args.threads), "--batch-size", "1", "--max-length", str(length),
                                "--passes", str(BARE_PASSES if length <= BARE_PASSES_UP_TO else BARE_PASSES_ABOVE)])
    fields = dict(line.split(" ", 1) for line in out.splitlines() if line and not line.startswith("bare forward"))
    return {"peak": peak, "forward": float(fields["forward_seconds"])}


def run_headscan(args, model, corpus, length, out):
    wall, peak, _ = measured([os.path.join(args.build, "headscan"), model, corpus, "-o", out, "--force",
                              "--max-length", str(length), "--threads", str(args.threads), "--batch-size", "1",
                              "--attention-block", args.attention_block,
                              "-q", "--no-html", "--no-plots", "--parser", "none"])
    with open(os.path.join(out, "heads.json"), encoding="utf-8") as f:
        run = json.load(f)["run"]
    return {"wall": wall, "peak": peak, "corpus": run["phases"]["corpus"], "run": run}


def largest_block(run):
    """(rows Q, bytes) of the largest attention block heads.json's run.attention says was used."""
    block = run["attention"]["largest_block"]
    return block["rows"], block["bytes"]


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", default="1024,2048,4096,8192,16384")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--work", help="where the model, corpora and reports go (default: a temporary folder)")
    parser.add_argument("--attention-block", default="auto")
    parser.add_argument("--write-model", metavar="PATH", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.write_model:
        build_model(args.write_model)
        return 0
    lengths = [int(n) for n in args.lengths.split(",")]
    if any(n < 2 or n > POSITIONS for n in lengths):
        sys.exit(f"--lengths: each between 2 and {POSITIONS}")
    work = args.work or tempfile.mkdtemp(prefix="headscan-long-")
    os.makedirs(work, exist_ok=True)
    model = os.path.join(work, "llama_long.pt")
    if not os.path.exists(model):
        # In a process of its own: a child inherits the peak RSS of the process it was forked from
        # (Linux keeps it across exec), so this one must not hold torch when it measures.
        subprocess.run([sys.executable, os.path.abspath(__file__), "--write-model", model], check=True)

    rows = []
    for length in lengths:
        corpus = os.path.join(work, f"corpus_{length}.txt")
        write_corpus(corpus, length)
        bare, headscan = [], []
        for _ in range(args.repeats):
            bare.append(run_bare(args, model, corpus, length))
            headscan.append(run_headscan(args, model, corpus, length, os.path.join(work, f"report_{length}")))
        q, block = largest_block(headscan[-1]["run"])
        row = {"T": length, "Q": q,
               "bare_forward": statistics.median(r["forward"] for r in bare),
               "bare_peak": statistics.median(r["peak"] for r in bare),
               "corpus": statistics.median(r["corpus"] for r in headscan),
               "wall": statistics.median(r["wall"] for r in headscan),
               "peak": statistics.median(r["peak"] for r in headscan), "block": block}
        row["memory_goal"] = MEMORY_GOAL * (row["bare_peak"] + block)
        rows.append(row)
        print_row(row, header=len(rows) == 1)

    missed = [r for r in rows if r["peak"] > r["memory_goal"]]
    print(f"\nmemory: headscan's peak RSS <= {MEMORY_GOAL:.2f} x (bare forward's + one block) at every T: "
          + ("met" if not missed else "NOT met at T = " + ", ".join(str(r["T"]) for r in missed)))
    at_goal = [r for r in rows if r["T"] == TIME_GOAL_LENGTH]
    time_missed = False
    if at_goal:
        ratio = at_goal[0]["corpus"] / at_goal[0]["bare_forward"]
        time_missed = ratio > TIME_GOAL
        print(f"time: at T = {TIME_GOAL_LENGTH}, headscan's corpus pass / bare forward = {ratio:.2f} "
              f"(goal <= {TIME_GOAL:.2f}): " + ("NOT met" if time_missed else "met"))
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 3 if missed or time_missed else 0


def print_row(row, header):
    mib = 1 << 20
    if header:
        print(f"{'T':>6} {'Q':>6} {'bare fwd s':>10} {'bare MiB':>9} {'hs corpus s':>11} "
              f"{'hs wall s':>9} {'hs MiB':>7} {'block MiB':>9} {'corpus/fwd':>10} {'MiB goal':>8}")
    print(f"{row['T']:>6} {row['Q']:>6} {row['bare_forward']:>10.2f} "
          f"{row['bare_peak'] / mib:>9.0f} {row['corpus']:>11.2f} {row['wall']:>9.2f} {row['peak'] / mib:>7.0f} "
          f"{row['block'] / mib:>9.0f} {row['corpus'] / row['bare_forward']:>10.2f} {row['memory_goal'] / mib:>8.0f}",
          flush=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
