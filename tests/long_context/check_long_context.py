#!/usr/bin/env python3
"""The long-context head types (README, "Head types") on models built for them
(tests/fixtures/make_long_context_models.py) and on random-weight models:

  * streaming, separator, punctuation and their chance levels equal an independent computation
    of their definitions on the planted models' attention (recomputed here in eager PyTorch from
    the fixture's own modules, over the same windows headscan reads), within 1e-5;
  * retrieval: the copying model's induction head scores 1.0 on 55 copy events (copy accuracy 1.0
    at every depth, one probe per depth: the needle plan stops there) and is labelled retrieval,
    its duplicate-token head scores 0; the model that never copies has no copy event after the
    plan's single first probe, retrieval null and a note saying why;
  * the needle plan on a model that copies 2 or 3 tokens of each needle: rounds past the first,
    the same probes whatever the batch size; --probes needles=1 stops it after one haystack per
    depth, --probes induction=3 runs 3 induction probes;
  * the default run's needle probes sized to its corpus: as long as its longest window, at most a
    quarter of its tokens (a corpus of 6 lines: one probe, retrieval null with a note saying so),
    and the grid up to --max-length when asked;
  * --probes none: no probe or needle phase; induction, duplicate_token and retrieval null for
    every head, repeat_loss null, each with a note saying --probes left the probes out; heads.csv
    leaves those scores empty;
  * the needle-in-a-haystack grid: its cells add up to the overall counts, each head's hits over
    the copy events are its retrieval score; --needle-lengths gives a row per length, the same
    whatever the batch size, and lengths past max_length, below a probe's size or not numbers are
    refused with exit 2;
  * the KV-cache plan: per head full or streaming by the labels, kv_plan/full_attention_heads.tsv
    and config.json as DuoAttention's load_attn_pattern reads them, the memory saved, and with
    --ablation its loss_delta against a recomputation with the streaming head masked before the
    softmax;
  * the KV-cache plan's needle check (--ablation) on a model that copies through a sink head: the
    share of the copy events whose copied token stays in the restricted head's window, and the
    loss change on the copied tokens, against their closed forms;
  * streaming_duo is null on sequences shorter than 385 tokens;
  * the sink rate is the share of heads with first_token >= 0.3;
  * random-weight models get none of the new labels.

Usage: check_long_context.py HEADSCAN FIXTURE_DIR WORK_DIR
"""
import csv
import importlib.util
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
NEW_LABELS = {"retrieval", "streaming", "separator", "punctuation"}
SINK, WINDOW = 4, 64


def fixture_module():
    path = os.path.join(HERE, "..", "fixtures", "make_long_context_models.py")
    spec = importlib.util.spec_from_file_location("long_context_models", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(headscan, model, corpus, out, *extra):
    shutil.rmtree(out, ignore_errors=True)
    command = [headscan, model, corpus, "-o", out, "--parser", "none", "--no-html", "--no-plots", "-q", *extra]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"FAIL: {' '.join(command)} exited {result.returncode}\n{result.stderr}")
    with open(os.path.join(out, "heads.json"), encoding="utf-8") as f:
        return json.load(f)


def windows(module, corpus, room, prefix, suffix):
    """The sequences headscan reads: each line's tokens cut into windows of `room`, framed."""
    sequences = []
    with open(corpus, encoding="utf-8") as f:
        for line in f:
            ids = [module.VOCAB[token] for token in line.split()]
            for start in range(0, len(ids), room):
                sequences.append(prefix + ids[start:start + room] + suffix)
    return sequences


def attention_of(model, ids):
    """[H, T, T] attention of one sequence, captured from the module's softmax."""
    captured = []
    original = torch.softmax

    def capture(x, dim=None, **kwargs):
        out = original(x, dim=dim, **kwargs)
        if out.dim() == 4:
            captured.append(out)
        return out

    torch.softmax = capture
    try:
        with torch.no_grad():
            tensor = torch.tensor([ids])
            model(tensor, torch.ones_like(tensor))
    finally:
        torch.softmax = original
    return captured[0][0].double().numpy()


def streaming_reference(module, model, sequences):
    sums = np.zeros(4)
    count = 0
    for ids in sequences:
        a = attention_of(model, ids)
        for i in range(SINK + WINDOW, len(ids)):
            sums += a[:, i, :SINK].sum(-1) + a[:, i, i - WINDOW + 1:i + 1].sum(-1)
            count += 1
    return sums / count


def key_kind_reference(module, model, sequences, is_kind, causal):
    heads = None
    sums, baseline, count = None, 0.0, 0
    for ids in sequences:
        a = attention_of(model, ids)
        heads = a.shape[0]
        if sums is None:
            sums = np.zeros(heads)
        kind = np.array([is_kind(t, position) for position, t in enumerate(ids)], dtype=float)
        last = len(ids) - 1 if not causal else len(ids)  # the [SEP] suffix is a key, not a query
        for i in range(1, last):
            visible = kind[:i + 1] if causal else kind
            sums += (a[:, i, :len(visible)] * visible).sum(-1)
            baseline += visible.sum() / len(visible)
            count += 1
    return sums / count, baseline / count


def kv_plan_loss_delta(module, items):
    """Mean next-token loss with head 0 of WindowModel restricted to sink + window, less the full one."""
    def loss(ids, restrict):
        tensor = torch.tensor([ids])
        T = len(ids)
        position = torch.arange(T)
        visible = position.view(1, T) <= position.view(T, 1)
        kept = (position.view(1, T) < SINK) | (position.view(1, T) > position.view(T, 1) - WINDOW)
        h0 = 8.0 * (position.view(1, T) == position.view(T, 1) - 1).double()
        if restrict:
            h0 = h0.masked_fill(~kept, float("-inf"))
        probs = torch.softmax(h0.masked_fill(~visible, float("-inf")), dim=-1)
        logits = 20.0 * probs @ torch.nn.functional.one_hot(tensor[0], module.VOCAB_SIZE).double()
        return torch.nn.functional.cross_entropy(logits[:-1], tensor[0, 1:]).item()

    full = sum(loss(ids, False) for ids in items) / len(items)
    restricted = sum(loss(ids, True) for ids in items) / len(items)
    return restricted - full


def refused(headscan, model, corpus, out, message, *extra):
    command = [headscan, model, corpus, "-o", out, "--force", "--parser", "none", "--no-html", "--no-plots", "-q", *extra]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 2 or message not in result.stderr:
        sys.exit(f"FAIL: {' '.join(command)} exited {result.returncode}, expected 2 saying {message!r}\n{result.stderr}")


def check_needle_grid(document, lengths, probes):
    """The grid's cells add up to the section's counts; each head's hits / copy events is its score."""
    retrieval = document["retrieval"]
    grid = retrieval["grid"]
    assert retrieval["lengths"] == lengths, retrieval["lengths"]
    assert sum(map(sum, grid["probes"])) == retrieval["probes"] == probes, grid
    assert sum(map(sum, grid["copy_events"])) == retrieval["copy_events"], grid
    assert sum(map(sum, grid["candidates"])) == retrieval["candidates"], grid
    for depth, accuracy in enumerate(retrieval["copy_accuracy"]):
        events = sum(row[depth] for row in grid["copy_events"])
        close(accuracy, events / sum(row[depth] for row in grid["candidates"]), f"copy accuracy at depth {depth}", 1e-12)
    hits = retrieval["head_hits"]
    for index, head in enumerate(document["heads"]):  # rows of head_hits: the attention layers, in order
        cells = hits[index // len(hits[0])][head["head"]]
        assert len(cells) == len(lengths) and all(len(row) == 5 for row in cells), cells
        assert all(0 <= h <= e for row, events in zip(cells, grid["copy_events"]) for h, e in zip(row, events)), cells
        close(head["scores"]["retrieval"], sum(map(sum, cells)) / retrieval["copy_events"],
              f"retrieval of head {head['head']} from its grid", 1e-6)


def check_sized_to_corpus(headscan, work, corpus):
    """Without --needle-lengths, --max-length or a --probes value, the needle probes are as long as
    the corpus's longest window and take at most a quarter of its tokens (at least one probe); with
    --max-length, the grid up to it."""
    with open(corpus, encoding="utf-8") as f:
        lines = f.read().splitlines()
    # Lines of 40 words: windows of 41 tokens, where max_length is 128.
    short = os.path.join(work, "short_lines.txt")
    with open(short, "w", encoding="utf-8") as f:
        f.write("\n".join(" ".join(line.split()[:40]) for line in lines) + "\n")
    document = run(headscan, os.path.join(work, "needle_copy.pt"), short, os.path.join(work, "sized_short"))
    retrieval = document["retrieval"]
    assert retrieval["lengths"] == [41], retrieval["lengths"]
    assert retrieval["probes"] == 5 and retrieval["copy_events"] == 55, retrieval
    # 6 lines (about 720 tokens): a budget of about 180 tokens, one probe of 128; the model copies,
    # so the plan would run 4 more: retrieval is null, and the note says why and what to do.
    few = os.path.join(work, "few_lines.txt")
    with open(few, "w", encoding="utf-8") as f:
        f.write("\n".join(lines[:6]) + "\n")
    document = run(headscan, os.path.join(work, "needle_copy.pt"), few, os.path.join(work, "sized_few"))
    retrieval = document["retrieval"]
    tokens = document["corpus"]["tokens"]
    assert retrieval["lengths"] == [128] and retrieval["probes"] == 1, retrieval
    assert retrieval["probes"] * 128 <= max(128, tokens // 4), (retrieval, tokens)
    assert "25 % of the corpus" in retrieval["note"] and "--probes needles=N" in retrieval["note"], retrieval["note"]
    # Asked for: --max-length gives the grid up to it, whatever the corpus.
    asked = run(headscan, os.path.join(work, "needle_copy.pt"), few, os.path.join(work, "sized_asked"),
                "--max-length", "128")
    assert asked["retrieval"]["probes"] == 5 and asked["retrieval"]["copy_events"] == 55, asked["retrieval"]


def check_probe_budgets(headscan, work, corpus):
    """The needle plan's rounds on a model that copies a few needle tokens, the same whatever the
    batch size; --probes N per kind; --probes none."""
    partial = [run(headscan, os.path.join(work, "needle_partial.pt"), corpus, os.path.join(work, f"needle_partial_{b}"),
                   "--batch-size", str(b)) for b in (1, 3, 8)]
    retrieval = partial[0]["retrieval"]
    events = retrieval["grid"]["copy_events"][0]
    # Fewer than 20 copy events in the first 5 probes (haystack 0 at every depth), so a second
    # round, haystack 1 at every depth; then 20 or more: the length stops.
    assert retrieval["grid"]["probes"] == [[2] * 5], retrieval["grid"]
    assert 20 <= retrieval["copy_events"] == sum(events) and retrieval["copy_accuracy"] != [1.0] * 5, retrieval
    check_needle_grid(partial[0], [128], 10)
    for other in partial[1:]:
        assert other["retrieval"] == retrieval, "the needle probes depend on the batch size"
    # --probes needles=1: at most one haystack per (length, depth) cell; induction=3: 3 probes.
    capped = run(headscan, os.path.join(work, "needle_partial.pt"), corpus, os.path.join(work, "needle_partial_capped"),
                 "--probes", "induction=3,needles=1")
    grid = capped["retrieval"]["grid"]
    assert grid["probes"] == [[1] * 5], grid
    assert capped["retrieval"]["copy_events"] < 20 and "note" in capped["retrieval"], capped["retrieval"]
    assert all(h["scores"]["retrieval"] is None for h in capped["heads"]), capped["heads"]
    assert capped["probes"]["count"] == 3 and capped["probes"]["repeat_lengths"] == [25, 20, 15], capped["probes"]
    assert capped["heads"][0]["scores"]["induction"] is not None, capped["heads"][0]

    # --probes none: no probe or needle pass, and the scores that need them null with a note.
    out = os.path.join(work, "needle_copy_none")
    none = run(headscan, os.path.join(work, "needle_copy.pt"), corpus, out, "--probes", "none")
    phases = list(none["run"]["phases"])
    assert "probes" not in phases and "needles" not in phases and "corpus" in phases, phases
    for head in none["heads"]:
        for score in ("induction", "duplicate_token", "retrieval"):
            assert head["scores"][score] is None, head
        assert not {"induction", "duplicate-token", "retrieval"} & set(head["labels"]), head
    assert none["probes"]["count"] == 0 and "--probes" in none["probes"]["skipped_because"], none["probes"]
    assert none["model"]["repeat_loss"] is None and "--probes" in none["model"]["repeat_loss_note"], none["model"]
    assert none["retrieval"]["probes"] == 0 and "--probes" in none["retrieval"]["note"], none["retrieval"]
    assert none["retrieval"]["lengths"] == [] and none["retrieval"]["grid"]["probes"] == [], none["retrieval"]
    with open(os.path.join(out, "heads.csv"), encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    for score in ("induction", "duplicate_token", "retrieval"):
        column = rows[0].index(score)
        assert all(row[column] == "" for row in rows[1:]), (score, rows)
    for value, message in [("0", "expected default, none, a number N from 1 to 1000"),
                           ("needles=all", "found \"all\" for needles"),
                           ("retrieval=none", "the kinds are induction and needles")]:
        refused(headscan, os.path.join(work, "needle_copy.pt"), corpus, os.path.join(work, "probes_refused"),
                message, "--probes", value)


def sink_copy_needle_check(module, retrieval):
    """The KV-cache plan's needle check on SinkCopyModel with its head restricted to SINK + WINDOW:
    per length, the share of copy events still made and the mean loss change on the copied token.

    A copy event at final-needle token k copies the inserted needle's token k + 1, n + K - p - 1
    tokens back (n haystack tokens, p = round(depth * n) of them before the needle). Within the
    window the copied token keeps its weight; beyond it the head keeps BOS (its logit less 1000) and
    keys of weight e^-40, so every other token's logit is 0 and the copied token's loss ln(V - 1).
    The full model gives the copied token 4/9 of the weight: a logit of 80/9 against 0 for V - 2
    other tokens."""
    n, K = retrieval["haystack_tokens"], retrieval["needle_length"]
    events = retrieval["grid"]["copy_events"][-1]
    kept = sum(count for depth, count in zip(retrieval["depths"], events)
               if n + K - int(np.floor(depth * n + 0.5)) - 1 < WINDOW)
    logit = 80.0 / 9.0
    full_loss = np.log(np.exp(logit) + module.VOCAB_SIZE - 2) - logit
    lost_delta = np.log(module.VOCAB_SIZE - 1) - full_loss
    return kept / sum(events), (sum(events) - kept) / sum(events) * lost_delta


def close(a, b, what, tolerance=1e-5):
    if a is None or b is None or abs(a - b) > tolerance:
        sys.exit(f"FAIL {what}: headscan {a}, reference {b}")


def labels(document, head):
    return set(document["heads"][head]["labels"])


def main(argv):
    headscan, fixtures, work = argv[1:4]
    os.makedirs(work, exist_ok=True)
    subprocess.run([sys.executable, os.path.join(HERE, "..", "fixtures", "make_long_context_models.py"), work], check=True)
    module = fixture_module()
    corpus = os.path.join(work, "long_corpus.txt")

    # Retrieval and streaming on the copying model.
    copy = run(headscan, os.path.join(work, "needle_copy.pt"), corpus, os.path.join(work, "needle_copy"))
    retrieval = copy["retrieval"]
    # The needle plan: haystack 0 at depth 0.9 (11 copy events), then at the other depths: 55.
    assert retrieval["probes"] == 5 and retrieval["copy_events"] == 55, retrieval
    assert retrieval["grid"]["probes"] == [[1] * 5], retrieval["grid"]
    assert retrieval["copy_accuracy"] == [1.0] * 5, retrieval
    scores = [h["scores"] for h in copy["heads"]]
    close(scores[0]["retrieval"], 1.0, "retrieval of the induction head")
    close(scores[1]["retrieval"], 0.0, "retrieval of the duplicate-token head")
    assert "retrieval" in labels(copy, 0) and "retrieval" not in labels(copy, 1), copy["heads"]
    check_needle_grid(copy, [module.CAUSAL_MAX_LEN], 5)
    lengths = [run(headscan, os.path.join(work, "needle_copy.pt"), corpus, os.path.join(work, f"needle_lengths_{b}"),
                   "--needle-lengths", "96,64", "--batch-size", str(b)) for b in (1, 3)]
    check_needle_grid(lengths[0], [64, 96], 10)
    assert lengths[0]["retrieval"] == lengths[1]["retrieval"], "the needle probes depend on the batch size"
    for value, message in [("256", "256 is longer than the run's max_length 128"),
                           ("36", "36 is shorter than a needle probe can be"),
                           ("64,x", "expected the needle probes' lengths in tokens")]:
        refused(headscan, os.path.join(work, "needle_copy.pt"), corpus, os.path.join(work, "needle_refused"),
                message, "--needle-lengths", value)
    causal_model = module.NeedleModel(copy=True).eval()
    expected = streaming_reference(module, causal_model, windows(module, corpus, module.CAUSAL_MAX_LEN - 1,
                                                                 [module.VOCAB["<s>"]], []))
    for head in range(4):
        close(scores[head]["streaming"], float(expected[head]), f"streaming of head {head}")
    assert "streaming" in labels(copy, 2) and "streaming" not in labels(copy, 3), copy["heads"]
    assert all(score["streaming_duo"] is None for score in scores), scores  # no query at 384 or later
    punctuation_ids = {module.VOCAB[p] for p in module.PUNCTUATION}
    causal_sequences = windows(module, corpus, module.CAUSAL_MAX_LEN - 1, [module.VOCAB["<s>"]], [])
    means, chance = key_kind_reference(module, causal_model, causal_sequences, lambda t, p: t in punctuation_ids, True)
    for head in range(4):
        close(scores[head]["punctuation"], float(means[head]), f"punctuation of causal head {head}")
        close(scores[head]["punctuation_baseline"], chance, "punctuation chance level, causal")

    plan = copy["kv_plan"]
    expected_plan = ["full", "full", "streaming", "full"]  # retrieval, not streaming, streaming, not streaming
    assert plan["heads"] == [expected_plan], plan
    assert plan["full_attention_heads"] == [[1, 1, 0, 1]] and plan["sink_size"] == SINK and plan["recent_size"] == WINDOW
    for context, saved in plan["memory_saved"].items():
        close(saved, 0.25 * (1 - (SINK + WINDOW) / int(context)), f"memory saved at {context}", 1e-9)
    tsv = np.loadtxt(os.path.join(work, "needle_copy", "kv_plan", "full_attention_heads.tsv"), dtype=float, delimiter="\t")
    assert np.array_equal(np.atleast_2d(tsv), np.array([[1, 1, 0, 1]])), tsv
    with open(os.path.join(work, "needle_copy", "kv_plan", "config.json"), encoding="utf-8") as f:
        assert json.load(f) == {"sink_size": SINK, "recent_size": WINDOW}
    first_token = [h["scores"]["first_token"] for h in copy["heads"]]
    close(copy["summary"]["sink_rate"], sum(1 for s in first_token if s is not None and s >= 0.3) / 4, "sink rate")

    # --sink and --window change the definition and the plan.
    wide = run(headscan, os.path.join(work, "needle_copy.pt"), corpus, os.path.join(work, "needle_wide"),
               "--sink", "2", "--window", "8")
    assert wide["thresholds"]["streaming_sink"] == 2 and wide["thresholds"]["streaming_window"] == 8
    assert wide["kv_plan"]["sink_size"] == 2 and wide["kv_plan"]["recent_size"] == 8

    # The model that never copies: no copy event, retrieval null.
    nocopy = run(headscan, os.path.join(work, "needle_nocopy.pt"), corpus, os.path.join(work, "needle_nocopy"))
    assert nocopy["retrieval"]["copy_events"] == 0 and "note" in nocopy["retrieval"], nocopy["retrieval"]
    assert all(h["scores"]["retrieval"] is None for h in nocopy["heads"]), nocopy["heads"]
    assert not any("retrieval" in h["labels"] for h in nocopy["heads"])
    assert nocopy["retrieval"]["grid"]["probes"] == [[0, 0, 0, 0, 1]], nocopy["retrieval"]["grid"]  # one probe, at 0.9

    check_probe_budgets(headscan, work, corpus)
    check_sized_to_corpus(headscan, work, corpus)

    # Separator and punctuation on the BERT-style model.
    separator = run(headscan, os.path.join(work, "separator.pt"), corpus, os.path.join(work, "separator"))
    bert_model = module.SeparatorModel().eval()
    bert_sequences = windows(module, corpus, module.BIDIRECTIONAL_MAX_LEN - 2, [module.CLS], [module.SEP])
    sep_means, sep_chance = key_kind_reference(module, bert_model, bert_sequences,
                                               lambda t, p: p > 0 and t in (module.CLS, module.SEP), False)
    punct_means, punct_chance = key_kind_reference(module, bert_model, bert_sequences,
                                                   lambda t, p: t in punctuation_ids, False)
    for head in range(3):
        s = separator["heads"][head]["scores"]
        close(s["separator"], float(sep_means[head]), f"separator of head {head}")
        close(s["separator_baseline"], sep_chance, "separator chance level")
        close(s["punctuation"], float(punct_means[head]), f"punctuation of head {head}")
        close(s["punctuation_baseline"], punct_chance, "punctuation chance level")
    assert labels(separator, 0) & NEW_LABELS == {"separator"}, separator["heads"][0]
    assert labels(separator, 1) & NEW_LABELS == {"punctuation"}, separator["heads"][1]
    assert not labels(separator, 2) & NEW_LABELS, separator["heads"][2]
    assert "kv_plan" not in separator and separator["retrieval"]["note"]

    # The KV-cache plan's causal check: the ablation set's loss with the plan's streaming head
    # restricted to its cache (keys outside it masked to -inf before the softmax), against the full
    # model, recomputed here one sequence at a time.
    window = run(headscan, os.path.join(work, "window_lm.pt"), corpus, os.path.join(work, "window_lm"), "--ablation")
    plan = window["kv_plan"]
    assert plan["heads"] == [["streaming", "full"]], plan["heads"]
    items = windows(module, corpus, module.CAUSAL_MAX_LEN - 1, [module.VOCAB["<s>"]], [])[:window["ablation"]["sequences"]]
    close(kv_plan_loss_delta(module, items), plan["loss_delta"], "kv_plan.loss_delta", 1e-6)
    # By construction about 2 % of the head's weight lies outside its cache: just over the 0.05 nats
    # a plan may cost, which the plan and the warnings say.
    assert plan["loss_delta"] > 0.05 and "loss_note" in plan, plan
    assert any("KV-cache plan costs" in warning for warning in window["warnings"]), window["warnings"]
    assert "needles" not in plan and "copied" in plan["needles_note"], plan  # it never copies a needle

    # The plan's needle check: every head streaming (threshold 0), the copying head among them.
    sink = run(headscan, os.path.join(work, "needle_sink.pt"), corpus, os.path.join(work, "needle_sink"), "--ablation",
               "--threshold", "streaming=0")
    plan, retrieval = sink["kv_plan"], sink["retrieval"]
    assert plan["heads"] == [["streaming", "streaming"]] and sink["heads"][0]["scores"]["retrieval"] == 0, sink
    needles = plan["needles"]
    assert needles["lengths"] == retrieval["lengths"] == [module.CAUSAL_MAX_LEN], needles
    assert needles["copy_events"] == [retrieval["copy_events"]] == [55], needles
    accuracy, loss_delta = sink_copy_needle_check(module, retrieval)
    assert 0 < accuracy < 1, accuracy
    close(needles["copy_accuracy"][0], accuracy, "kv_plan.needles.copy_accuracy", 1e-12)
    close(needles["loss_delta"][0], loss_delta, "kv_plan.needles.loss_delta", 1e-5)
    # Batches of 3 probes, where the plan's second round (4 probes) ends in a short batch: the same check.
    small = run(headscan, os.path.join(work, "needle_sink.pt"), corpus, os.path.join(work, "needle_sink_3"),
                "--ablation", "--threshold", "streaming=0", "--batch-size", "3")["kv_plan"]["needles"]
    assert small["lengths"] == needles["lengths"] and small["copy_events"] == needles["copy_events"], small
    close(small["copy_accuracy"][0], needles["copy_accuracy"][0], "copy_accuracy with --batch-size 3", 1e-12)
    close(small["loss_delta"][0], needles["loss_delta"][0], "loss_delta with --batch-size 3", 1e-6)

    # Random weights: none of the new labels.
    for name in ["random_gpt2", "random_bert"]:
        document = run(headscan, os.path.join(fixtures, f"{name}.pt"), os.path.join(fixtures, "random_corpus.txt"),
                       os.path.join(work, name))
        for head in document["heads"]:
            if set(head["labels"]) & NEW_LABELS:
                sys.exit(f"FAIL {name} L{head['layer']}H{head['head']} has {head['labels']}")
    print("ok: streaming, separator and punctuation equal their references; retrieval, the KV-cache plan, the sink "
          "rate and random models as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
