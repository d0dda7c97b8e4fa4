#!/usr/bin/env python3
"""headscan on a planted model at 16k tokens on the CPU, its attention computed by headscan's own
op in row blocks (tests/fixtures/make_long_context_sdpa_models.py: one scaled_dot_product_attention,
is_causal, no mask tensor), as a TorchScript archive and as an exported program, with the default
--attention-block auto:

  * each run stays within MEMORY_BOUND of peak resident memory (wait4's ru_maxrss of the process,
    and heads.json's run.peak_host_memory_bytes), where one materialised [1, 4, 16384, 16384]
    float32 attention alone is 4 GiB; heads.json's run.attention says the layer ran blockwise;
  * streaming (at --sink 128 --window 256), streaming_duo and first_token of every head equal their
    definitions computed here in closed form in float64 from the planted scores, within 1e-5, over
    the corpus's 16,384-token sequence;
  * the archive's needle probes at 8,192 tokens: the model copies every needle token (copy events =
    candidates, one probe per depth as the needle plan runs for such a model), the copy head's retrieval is 1.0 and the other heads' 0.0;
  * labels: the copy head retrieval, the streaming head streaming, the full head neither, the
    first-token head first-token;
  * the exported program (needle probes of 64 tokens only, to keep the test short) gives the
    archive's scores within 1e-6.

Usage: check_long_sequences.py HEADSCAN WORK_DIR
"""
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "..", "fixtures", "make_long_context_sdpa_models.py")
LENGTH, NEEDLE_LENGTH = 16384, 8192
SINK, WINDOW = 128, 256
# Peak resident memory allowed. LibTorch and the model take about 0.4 GiB; the planner's blocks are
# at most 256 MiB on the CPU, a block's working set about six of them (analyzer/model/attention_plan.h);
# one [1, 4, T, T] float32 attention at 16k tokens is 4 GiB, so a run that materialised it fails.
MEMORY_BOUND = 2048 << 20
TOLERANCE = 1e-5


def run_headscan(headscan, model, corpus, out, needle_length):
    """heads.json and the process's peak RSS in bytes (wait4: this child's own; the caller holds no
    torch, whose pages a child would inherit into its count)."""
    shutil.rmtree(out, ignore_errors=True)
    command = [headscan, model, corpus, "-o", out, "--max-length", str(LENGTH), "--sink", str(SINK),
               "--window", str(WINDOW), "--needle-lengths", str(needle_length),
               "--parser", "none", "--no-html", "--no-plots", "-q"]
    begin = time.monotonic()
    with open(os.path.join(os.path.dirname(out), "headscan.stderr"), "w+") as err:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        err.seek(0)
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"FAIL: {' '.join(command)} exited {os.waitstatus_to_exitcode(status)}\n{err.read()}")
    print(f"headscan {os.path.basename(model)} at {LENGTH} tokens, needles of {needle_length}: "
          f"{time.monotonic() - begin:.1f} s, peak RSS {usage.ru_maxrss >> 10} MiB")
    with open(os.path.join(out, "heads.json"), encoding="utf-8") as f:
        return json.load(f), usage.ru_maxrss * 1024


def fixture_module():
    spec = importlib.util.spec_from_file_location("long_context_sdpa_models", FIXTURE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def corpus_ids(model_path, corpus_path):
    """The corpus's one sequence as headscan reads it: BOS, then each word's id in the archive's own
    tokenizer.json (WordLevel)."""
    with zipfile.ZipFile(model_path) as archive:
        name = next(n for n in archive.namelist() if n.endswith("extra/tokenizer.json"))
        vocab = json.loads(archive.read(name))["model"]["vocab"]
    with open(corpus_path, encoding="utf-8") as f:
        words = f.read().split()
    ids = np.array([vocab["<s>"]] + [vocab[w] for w in words], dtype=np.int64)
    assert len(ids) == LENGTH, len(ids)
    return ids


def references(planted, ids):
    """{score: [heads]} of streaming and first_token by their definitions (heads/streaming.cpp,
    heads/first_token.cpp) over the queries of one causal sequence, from each head's planted score
    s(i, j) summed in closed form (geometric series, cumulative sums), never a T x T matrix."""
    T = len(ids)
    i = np.arange(T, dtype=np.float64)
    streaming_rows = np.arange(SINK + WINDOW, T)   # queries i >= S + W
    first_rows = np.arange(1, T)                   # queries i >= 1
    cached = lambda total_at, kept_at: (kept_at / total_at)[streaming_rows]  # noqa: E731

    # H0 copy: s(i, j) = 16 code(ids[i])·code(ids[j-1]) (k_0 = 0), weights exp(s - 256) per query token.
    codes = np.array([[1.0 if (t >> d) & 1 else -1.0 for d in range(planted.CODE_DIM)]
                      for t in range(planted.VOCAB_SIZE)])
    previous = np.vstack([np.zeros(planted.CODE_DIM), codes[ids[:-1]]])
    gain = planted.COPY_GAIN ** 2
    z0, sink0, window0, first0 = (np.zeros(T) for _ in range(4))
    for token in np.unique(ids):
        rows = ids == token
        weights = np.exp(gain * previous @ codes[token] - gain * planted.CODE_DIM)
        cumulative = np.concatenate([[0.0], np.cumsum(weights)])  # cumulative[n] = sum of weights[:n]
        positions = np.flatnonzero(rows)
        z0[rows] = cumulative[positions + 1]
        sink0[rows] = cumulative[np.minimum(positions + 1, SINK)]
        window0[rows] = cumulative[positions + 1] - cumulative[np.maximum(positions + 1 - WINDOW, 0)]
        first0[rows] = weights[0]
    # H1 streaming: s = BETA on the first SINK keys, ALPHA (j - i) on the later ones.
    decay = np.exp(-planted.ALPHA)
    sink_mass = SINK * np.exp(planted.BETA)
    late = np.maximum(i - SINK + 1, 0)                      # keys SINK..i
    z1 = np.where(i < SINK, (i + 1) * np.exp(planted.BETA), sink_mass + (1 - decay ** late) / (1 - decay))
    kept1 = sink_mass + (1 - decay ** WINDOW) / (1 - decay)
    first1 = np.exp(planted.BETA) / z1
    # H2 full: uniform over j <= i.
    # H3 first token: s = FIRST_TOKEN_SCORE at j = 0, 0 elsewhere.
    e = np.exp(planted.FIRST_TOKEN_SCORE)
    streaming = [
        np.mean(cached(z0, sink0 + window0)),
        np.mean(cached(z1, np.full(T, kept1))),
        np.mean(cached(i + 1, np.full(T, SINK + WINDOW, dtype=np.float64))),
        np.mean(cached(e + i, np.full(T, e + SINK - 1 + WINDOW))),
    ]
    first_token = [np.mean((first0 / z0)[first_rows]), np.mean(first1[first_rows]),
                   np.mean((1 / (i + 1))[first_rows]), np.mean((e / (e + i))[first_rows])]
    return {"streaming": streaming, "streaming_duo": streaming, "first_token": first_token}


def check_memory(document, peak, what, failures):
    reported = document["run"].get("peak_host_memory_bytes")
    for source, value in (("wait4 ru_maxrss", peak), ("heads.json run.peak_host_memory_bytes", reported)):
        if value is None or value > MEMORY_BOUND:
            failures.append(f"{what}: peak memory ({source}) {value} bytes, bound {MEMORY_BOUND}")
    attention = document["run"]["attention"]
    if attention["blockwise_layers"] != 1 or attention["materialised_layers"] != 0 \
            or not attention["largest_block"]["rows"] < LENGTH:
        failures.append(f"{what}: the layer did not run in row blocks: {attention}")


def main(argv):
    headscan, work = argv[1:3]
    os.makedirs(work, exist_ok=True)
    subprocess.run([sys.executable, FIXTURE, work], check=True)
    model, corpus = os.path.join(work, "long_sdpa.pt"), os.path.join(work, "long_sdpa_corpus.txt")
    program = os.path.join(work, "long_sdpa.pt2")
    document, peak = run_headscan(headscan, model, corpus, os.path.join(work, "long_sdpa"), NEEDLE_LENGTH)
    exported, exported_peak = run_headscan(headscan, program, corpus, os.path.join(work, "long_sdpa_pt2"), 64)

    failures = []
    check_memory(document, peak, "long_sdpa.pt", failures)
    check_memory(exported, exported_peak, "long_sdpa.pt2", failures)
    heads = document["heads"]
    assert [(h["layer"], h["head"]) for h in heads] == [(0, h) for h in range(4)], heads
    thresholds = document["thresholds"]
    assert (thresholds["streaming_sink"], thresholds["streaming_window"]) == (SINK, WINDOW), thresholds

    planted = fixture_module()  # imported after the runs: see run_headscan
    expected = references(planted, corpus_ids(model, corpus))
    for score, values in expected.items():
        for head, value in enumerate(values):
            got = heads[head]["scores"][score]
            if got is None or abs(got - value) > TOLERANCE:
                failures.append(f"{score} of head {head}: headscan {got}, reference {value:.9f}")

    retrieval = document["retrieval"]
    if retrieval["lengths"] != [NEEDLE_LENGTH] or retrieval["haystack_tokens"] < NEEDLE_LENGTH - 64:
        failures.append(f"needle probes: lengths {retrieval['lengths']}, haystacks of {retrieval['haystack_tokens']}")
    # Every candidate query copies, and the needle plan stops after one probe per depth: 55 copy
    # events, past the 20 retrieval needs.
    if retrieval["copy_events"] != retrieval["candidates"] or retrieval["probes"] != len(retrieval["depths"]) \
            or retrieval["copy_events"] < retrieval["minimum_events"]:
        failures.append(f"needle probes at {NEEDLE_LENGTH}: not every needle token copied: "
                        f"{retrieval['copy_events']} copy events of {retrieval['candidates']}")
    for head, value in enumerate([1.0, 0.0, 0.0, 0.0]):
        got = heads[head]["scores"].get("retrieval")
        if got is None or abs(got - value) > TOLERANCE:
            failures.append(f"retrieval of head {head}: {got}, expected {value}")

    labels = [set(h["labels"]) for h in heads]
    wanted = [("retrieval", 0, True), ("streaming", 0, False), ("streaming", 1, True), ("retrieval", 1, False),
              ("streaming", 2, False), ("retrieval", 2, False), ("first-token", 3, True)]
    for label, head, present in wanted:
        if (label in labels[head]) != present:
            failures.append(f"head {head} {'lacks' if present else 'has'} the label {label}: {sorted(labels[head])}")

    for head, other in zip(heads, exported["heads"]):
        for score, value in head["scores"].items():
            if score == "retrieval" or not isinstance(value, (int, float)):
                continue  # the program's needles are 64 tokens long
            got = other["scores"].get(score)
            if got is None or abs(got - value) > 1e-6:
                failures.append(f"long_sdpa.pt2 head {head['head']} {score}: {got}, the archive's {value}")

    if failures:
        sys.exit("FAIL:\n  " + "\n  ".join(failures))
    print(f"ok: {LENGTH} tokens within {MEMORY_BOUND >> 20} MiB (peak {peak >> 20} and {exported_peak >> 20} MiB); "
          f"streaming, streaming_duo and first_token of 4 heads equal their closed forms; retrieval 1.0 for the "
          f"copy head at {NEEDLE_LENGTH}; labels as planted; the exported program's scores equal the archive's")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
