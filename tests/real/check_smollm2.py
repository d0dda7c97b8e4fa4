#!/usr/bin/env python3
"""headscan's heads.json on a real pretrained model (SmolLM2-135M-Instruct) against transformers'
own attention: every head's scores recomputed from output_attentions, as README's "Head types"
defines them, and the model's induction heads found.

    check_smollm2.py --heads REPORT/heads.json --records TOKENIZE.jsonl --model MODEL_DIR
                     --corpus CORPUS.txt [--idf REPORT/idf.txt] [--tolerance 1e-5] [--summary OUT.json]

TOKENIZE.jsonl is `headscan tokenize MODEL.pt2 CORPUS` (the windows headscan analyses, BOS
included). The reference is transformers' model from MODEL_DIR (attn_implementation="eager",
float32, output_attentions=True) run on each window alone, and on headscan's 10 induction probes,
rebuilt token for token by bench/peers/probes.py from heads.json's `probes` (seed, |R| of each,
repeats) and the tokenizer's vocabulary. From the maps, per head, pooled over all queries of all
sequences:

  corpus:  previous_token, first_token, entropy (tests/hf/hf_references.py), confidence,
           mean_distance, self, positional (offset, weight, argmax_rate), induction_text,
           streaming (S = 4, W = 64), streaming_duo, separator and punctuation with their
           baselines, rare_word with its baseline (idf from the windows' document frequencies,
           also checked against REPORT/idf.txt);
  probes:  induction, duplicate_token; and model.repeat_loss from the probes' logits.

Each score must be within --tolerance of heads.json's (mean_distance, in tokens: relative;
heads.json rounds to 6 decimals, so agreement shows as differences of about 5e-7). Scores that
count argmaxes (positional's argmax_rate, rare_word) are bounded instead: a query whose largest
weights lie within ARGMAX_EPS of each other may go either way (float32 attention computed two
ways), so heads.json's share must lie within [definite hits, possible hits] / queries, ± tolerance. The labels given from these
scores (every head type but syntactic and retrieval) must be those the reference's scores give at
heads.json's thresholds, except where a reference score lies within tolerance of its threshold.

Then the model's induction heads: at least MIN_INDUCTION_HEADS heads labelled induction, all of
them in layers 15 and above, the strongest (by the reference's induction score) at least 0.8, and
the model's in-context learning (repeat_loss: repeat 4 below a quarter of repeat 1). The tokenize
records must also be the Hugging Face tokenizer's ids of each line, after BOS.

Exit 0 when everything agrees; 1 with the differences listed otherwise.
"""

import argparse
import json
import math
import os
import sys
import time
import unicodedata

import torch

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "hf"))
sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))

from hf_references import ReferenceScores, layer_maps, query_sets, special_ids  # noqa: E402
import probes as probe_module  # noqa: E402 (bench/peers/probes.py)
from scores import earlier_occurrences  # noqa: E402 (bench/peers/scores.py)

ARGMAX_EPS = 1e-5  # weights closer than this to a row's largest count as tied (either way)
MIN_INDUCTION_HEADS = 5
OFFSETS = (-1, 1, -2, 2)  # positional's tie order: smaller |d|, then negative
MEAN_SCORES = ("previous_token", "first_token", "entropy", "confidence", "mean_distance", "self",
               "induction_text", "streaming", "streaming_duo", "separator", "punctuation",
               "induction", "duplicate_token")
BASELINES = ("separator_baseline", "punctuation_baseline", "rare_word_baseline")
STREAMING = {"streaming": (4, 64), "streaming_duo": (128, 256)}


# ---------------------------------------------------------------------------------------------
# Tokens


def bytes_to_unicode():
    """GPT-2's byte-level alphabet: byte -> the character a byte-level piece spells it with."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    characters = printable[:]
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            characters.append(256 + extra)
            extra += 1
    return dict(zip(printable, map(chr, characters)))


WHITESPACE = set(range(0x09, 0x0E)) | {0x20, 0x85, 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000} | \
    set(range(0x2000, 0x200B))


def is_punctuation_text(data: bytes) -> bool:
    """analyzer/tokenizers/piece_text.cpp: valid UTF-8, at least one character, white space aside
    only Unicode P* (symbols such as $ + < are not)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    characters = [c for c in text if ord(c) not in WHITESPACE]
    return bool(characters) and all(unicodedata.category(c).startswith("P") for c in characters)


class Vocabulary:
    """The tokenizer.json's pieces by id, its special ids and each id's punctuation flag."""

    def __init__(self, tokenizer_json, size):
        pieces = {i: piece for piece, i in tokenizer_json["model"]["vocab"].items()}
        for token in tokenizer_json.get("added_tokens", []):
            pieces[token["id"]] = token["content"]
        self.pieces = [pieces.get(i, "") for i in range(size)]
        self.special = special_ids(tokenizer_json)
        kinds = json.dumps(tokenizer_json.get("pre_tokenizer")) + json.dumps(tokenizer_json.get("decoder"))
        assert '"ByteLevel"' in kinds, "the check reads pieces as byte-level text (SmolLM2's tokenizer is)"
        to_byte = {c: b for b, c in bytes_to_unicode().items()}

        def text(i):
            if i in self.special:
                return b""
            piece = self.pieces[i]
            if all(c in to_byte for c in piece):
                return bytes(to_byte[c] for c in piece)
            return piece.encode("utf-8")

        self._text = text
        self._punctuation = {}

    def punctuation(self, i):
        if i not in self._punctuation:
            self._punctuation[i] = is_punctuation_text(self._text(i))
        return self._punctuation[i]


# ---------------------------------------------------------------------------------------------
# Reference scores


class Shares:
    """Argmax-counting scores: per (score, layer) the definite and possible hits [H] and queries."""

    def __init__(self):
        self.low, self.high, self.counts = {}, {}, {}

    def add(self, key, low, high, count):
        self.low[key] = self.low.get(key, 0) + low
        self.high[key] = self.high.get(key, 0) + high
        self.counts[key] = self.counts.get(key, 0) + count

    def bounds(self, key, head):
        count = self.counts.get(key, 0)
        if not count:
            return None
        return float(self.low[key][head]) / count, float(self.high[key][head]) / count


def argmax_hits(a, target, visible):
    """a [H, Q, T]; target, visible [Q, T] bool. Per head and query, whether the argmax is certainly
    on a target key (the best target beats every other visible key by more than ARGMAX_EPS) and
    whether it may be (the best target within ARGMAX_EPS of the row's largest)."""
    minus = torch.tensor(-math.inf, dtype=a.dtype)
    best_target = torch.where(target & visible, a, minus).amax(-1)
    best_other = torch.where(~target & visible, a, minus).amax(-1)
    return best_target > best_other + ARGMAX_EPS, best_target >= best_other - ARGMAX_EPS


class Reference:
    def __init__(self, vocabulary, idf_df):
        self.vocabulary = vocabulary
        self.means = ReferenceScores()  # its add() pools any score's per-query values
        self.shares = Shares()
        self.baselines = {}  # name -> [sum, count]
        self.df = idf_df

    def baseline(self, name, values, selected):
        entry = self.baselines.setdefault(name, [0.0, 0])
        entry[0] += float(sum(v for v, s in zip(values, selected) if s))
        entry[1] += int(sum(selected))

    def add_corpus(self, attentions, record):
        ids = record["ids"]
        length = len(ids)
        specials = self.vocabulary.special
        special = [i in specials for i in ids]
        sets, visible = query_sets(record, specials, causal=True)
        assert not any(special[1:]), "the corpus's windows hold special tokens past BOS (not this check's case)"
        queries = [True] * length  # no suffix in a causal model's window
        content = sets["previous_token"]  # i >= 1
        positions = torch.arange(length)
        causal = positions.unsqueeze(1) >= positions.unsqueeze(0)  # [Q, T]: key j <= i
        distance = (positions.unsqueeze(1) - positions.unsqueeze(0)).abs().double()
        ids_tensor = torch.tensor(ids)
        # induction_text: content queries whose token occurred at a content key s < i - 1; target s + 1.
        occurrences = earlier_occurrences(ids_tensor, bos=-1) & ~torch.tensor(special).unsqueeze(0) & \
            ~torch.tensor(special).unsqueeze(1)
        induction_targets = torch.zeros_like(occurrences)
        induction_targets[:, 1:] = occurrences.tril(-2)[:, :-1]
        induction_rows = induction_targets.any(1).tolist()
        # separator: special keys at j > 0; punctuation: non-special keys of punctuation text.
        separator_keys = torch.tensor([s and j > 0 for j, s in enumerate(special)])
        punctuation_keys = torch.tensor([not s and self.vocabulary.punctuation(t) for t, s in zip(ids, special)])
        counts = torch.arange(1, length + 1, dtype=torch.float64)
        for name, keys in (("separator", separator_keys), ("punctuation", punctuation_keys)):
            self.baseline(name + "_baseline", (keys.double().cumsum(0) / counts).tolist(), content)
        # rare_word: queries with >= 3 visible content keys, not all of maximal idf (least df).
        content_keys = torch.tensor([not s for s in special])
        df = torch.tensor([self.df[t] if not s else 10 ** 9 for t, s in zip(ids, special)])
        least = torch.cummin(df, 0).values
        rare_target = (df.unsqueeze(0) == least.unsqueeze(1)) & content_keys.unsqueeze(0) & causal
        seen = content_keys.long().cumsum(0)
        rare_count = rare_target.sum(1)
        rare_rows = ((seen >= 3) & (rare_count < seen)).tolist()
        self.baseline("rare_word_baseline", (rare_count.double() / seen.clamp(min=1).double()).tolist(), rare_rows)
        rare_mask = torch.tensor(rare_rows)

        self.means.add_sequence(attentions, record, specials, causal=True)  # previous_token, first_token, entropy
        for layer, attention in layer_maps(attentions):
            a = attention[0].double()  # [H, T, T]
            add = self.means.add
            add("confidence", layer, a.amax(-1), queries)
            add("mean_distance", layer, (a * distance).sum(-1), queries)
            add("self", layer, a.diagonal(dim1=-2, dim2=-1), queries)
            add("induction_text", layer, (a * induction_targets).sum(-1), induction_rows)
            cumulative = a.cumsum(-1)  # [H, Q, T]: row i's weights on keys 0..j
            for name, (sink, window) in STREAMING.items():
                start = sink + window
                if length > start:
                    rows = torch.arange(start, length)
                    kept = torch.zeros(a.shape[:2], dtype=torch.float64)
                    kept[:, rows] = cumulative[:, rows, sink - 1] + cumulative[:, rows, rows] - \
                        cumulative[:, rows, rows - window]
                    add(name, layer, kept, [i >= start for i in range(length)])
            add("separator", layer, (a * separator_keys).sum(-1), content)
            add("punctuation", layer, (a * punctuation_keys).sum(-1), content)
            top = a.topk(2, dim=-1)  # the two largest weights of each row, and the first's key
            for d in OFFSETS:
                rows = [0 <= i + d < length for i in range(length)]
                weight = torch.zeros(a.shape[:2], dtype=torch.float64)
                index = torch.arange(max(0, -d), min(length, length - d))
                weight[:, index] = a[:, index, index + d]
                add(f"positional{d:+d}", layer, weight, rows)
                # The argmax on i + d: certainly when it is the largest by more than ARGMAX_EPS,
                # possibly when within ARGMAX_EPS of the largest (argmax_hits() for one key per row).
                key = torch.arange(length) + d
                low = (top.indices[..., 0] == key) & (weight > top.values[..., 1] + ARGMAX_EPS)
                high = weight >= top.values[..., 0] - ARGMAX_EPS
                mask = torch.tensor(rows)
                self.shares.add((f"argmax{d:+d}", layer), low[:, mask].sum(1), high[:, mask].sum(1), int(mask.sum()))
            low, high = argmax_hits(a, rare_target, causal)
            self.shares.add(("rare_word", layer), low[:, rare_mask].sum(1), high[:, rare_mask].sum(1),
                            int(rare_mask.sum()))

    def add_probe(self, attentions, ids, bos):
        occurrences = earlier_occurrences(torch.tensor(ids), bos)
        targets = torch.zeros_like(occurrences)
        targets[:, 1:] = occurrences.tril(-2)[:, :-1]
        for layer, attention in layer_maps(attentions):
            a = attention[0].double()
            for name, mask in (("duplicate_token", occurrences), ("induction", targets)):
                self.means.add(name, layer, (a * mask).sum(-1), mask.any(1).tolist())

    def mean(self, name, layer, head):
        return self.means.mean(name, layer, head)

    def baseline_mean(self, name):
        total, count = self.baselines.get(name, (0.0, 0))
        return total / count if count else None

    def positional(self, layer, head):
        """(offset, weight, (argmax low, high)) at the reference's best offset, and the rounded
        weights of the others (to see a near tie)."""
        weights = {d: self.mean(f"positional{d:+d}", layer, head) for d in OFFSETS}
        best = None
        for d in OFFSETS:
            if weights[d] is not None and (best is None or round(weights[d] * 1e6) > round(weights[best] * 1e6)):
                best = d
        return best, weights


# ---------------------------------------------------------------------------------------------


def document_frequencies(records, specials):
    """idf's df over the corpus's documents (lines), special tokens excluded."""
    by_line = {}
    for record in records:
        by_line.setdefault(record["line"], set()).update(t for t in record["ids"] if t not in specials)
    df = {}
    for tokens in by_line.values():
        for t in tokens:
            df[t] = df.get(t, 0) + 1
    return df, len(by_line)


def check_idf_file(path, df, documents, vocabulary):
    """REPORT/idf.txt (headscan-idf 1, documents N, then `df "piece"`) against the windows' df."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    assert lines[0] == "headscan-idf 1" and lines[1] == f"documents {documents}", f"idf.txt header {lines[:2]}"
    by_piece = {}
    for line in lines[2:]:
        count, _, piece = line.partition(" ")
        by_piece[json.loads(piece)] = int(count)
    expected = {vocabulary.pieces[t]: n for t, n in df.items()}
    assert by_piece == expected, f"idf.txt's document frequencies differ from the windows': " \
        f"{sorted(set(by_piece.items()) ^ set(expected.items()))[:8]}"


def check_tokens(model_dir, records, corpus, bos):
    """The tokenize records are BOS and the Hugging Face tokenizer's ids of each line."""
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
    with open(corpus, encoding="utf-8") as f:
        lines = f.read().splitlines()
    assert len(records) == len(lines), f"{len(records)} windows for {len(lines)} lines (none should be cut)"
    for record, line in zip(records, lines):
        expected = [bos] + tokenizer(line, add_special_tokens=False)["input_ids"]
        assert record["ids"] == expected, f"line {record['line']}: headscan's ids differ from the tokenizer's " \
            f"from token {next(i for i, (x, y) in enumerate(zip(record['ids'] + [None], expected + [None])) if x != y)}"


def label_rules(thresholds):
    """(label, score name, test(value) -> bool, threshold) of the labels given by one mean score
    against its threshold (positional, separator, punctuation and rare-word: in main())."""
    t = thresholds
    return [
        ("previous-token", "previous_token", lambda v: v >= t["previous_token"], t["previous_token"]),
        ("first-token", "first_token", lambda v: v >= t["first_token"], t["first_token"]),
        ("broad", "entropy", lambda v: v >= t["entropy"], t["entropy"]),
        ("induction", "induction", lambda v: v >= t["induction"], t["induction"]),
        ("duplicate-token", "duplicate_token", lambda v: v >= t["duplicate_token"], t["duplicate_token"]),
        ("streaming", "streaming", lambda v: v >= t["streaming"], t["streaming"]),
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--heads", required=True)
    parser.add_argument("--records", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--idf")
    parser.add_argument("--tolerance", type=float, default=1e-5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--summary")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    began = time.time()
    tolerance = args.tolerance

    with open(args.heads, encoding="utf-8") as f:
        heads = json.load(f)
    with open(args.records, encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    with open(os.path.join(args.model, "tokenizer.json"), encoding="utf-8") as f:
        tokenizer_json = json.load(f)
    with open(os.path.join(args.model, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    vocabulary = Vocabulary(tokenizer_json, config["vocab_size"])
    bos = records[0]["ids"][0]
    assert all(r["ids"][0] == bos for r in records), "every window starts with BOS"
    assert vocabulary.pieces[bos] == heads["model"]["bos_token"], \
        f"BOS {vocabulary.pieces[bos]!r}, heads.json {heads['model']['bos_token']!r}"
    check_tokens(args.model, records, args.corpus, bos)
    df, documents = document_frequencies(records, vocabulary.special)
    if args.idf:
        check_idf_file(args.idf, df, documents, vocabulary)
    assert heads["corpus"]["tokens"] == sum(len(r["ids"]) for r in records), \
        f"heads.json's corpus has {heads['corpus']['tokens']} tokens, the windows {sum(len(r['ids']) for r in records)}"

    # headscan's probes, rebuilt.
    probes = heads["probes"]
    assert probes["count"] == len(probes["repeat_lengths"]) > 0, f"heads.json probes {probes}"
    probe_vocabulary = probe_module.probe_vocabulary(vocabulary.pieces, vocabulary.special)
    probe_ids = probe_module.make_probes(probe_vocabulary, bos, probes["repeat_lengths"], probes["repeats"],
                                         probes["seed"])
    default_lengths, _ = probe_module.repeat_lengths(heads["model"]["max_length"])
    assert probes["repeat_lengths"] == default_lengths, \
        f"heads.json's probes {probes['repeat_lengths']}, headscan's default {default_lengths}"

    import transformers

    model = transformers.AutoModelForCausalLM.from_pretrained(args.model, attn_implementation="eager",
                                                              dtype=torch.float32).eval()
    reference = Reference(vocabulary, df)
    loaded = time.time()
    losses = [[0.0, 0] for _ in range(probes["repeats"])]
    with torch.no_grad():
        for record in records:
            ids = torch.tensor([record["ids"]])
            out = model(input_ids=ids, attention_mask=torch.ones_like(ids), output_attentions=True)
            reference.add_corpus(out.attentions, record)
        for probe, length in zip(probe_ids, probes["repeat_lengths"]):
            ids = torch.tensor([probe])
            out = model(input_ids=ids, attention_mask=torch.ones_like(ids), output_attentions=True)
            reference.add_probe(out.attentions, probe, bos)
            loss = torch.nn.functional.cross_entropy(out.logits[0, :-1].double(), ids[0, 1:], reduction="none")
            for t in range(1, len(probe)):
                losses[(t - 1) // length][0] += float(loss[t - 1])
                losses[(t - 1) // length][1] += 1
    forward_seconds = time.time() - loaded

    # ---- compare
    problems = []
    worst = {}

    def note(name, got, want, where, slack=tolerance):
        if got is None or want is None:
            difference = 0.0 if got is None and want is None else math.inf
        else:
            difference = abs(got - want)
        worst[name] = max(worst.get(name, 0.0), difference)
        if difference > slack:
            problems.append(f"{where} {name}: headscan {got}, transformers {want}")

    def within(name, got, bounds, where):
        low, high = bounds
        outside = 0.0 if got is not None and low - tolerance <= got <= high + tolerance else \
            (math.inf if got is None else max(low - got, got - high))
        distance = 0.0 if got is None else (0.0 if low <= got <= high else max(low - got, got - high))
        worst[name] = max(worst.get(name, 0.0), distance)
        worst[name + " (undecided share)"] = max(worst.get(name + " (undecided share)", 0.0), high - low)
        if outside > tolerance:
            problems.append(f"{where} {name}: headscan {got}, transformers in [{low:.6f}, {high:.6f}]")

    model_info = heads["model"]
    n_heads = model_info["heads"]
    layers = sorted({h["layer"] for h in heads["heads"]})
    assert layers == list(range(config["num_hidden_layers"])) and n_heads == config["num_attention_heads"] and \
        len(heads["heads"]) == len(layers) * n_heads, "heads.json's layers and heads are not the model's"
    thresholds = heads["thresholds"]
    label_mismatches, near = [], 0
    for head in heads["heads"]:
        layer, h = head["layer"], head["head"]
        where = f"L{layer}H{h}"
        scores = head["scores"]
        for name in MEAN_SCORES:
            want = reference.mean(name, layer, h)
            # mean_distance is in tokens (up to about 100 here): its tolerance is relative.
            slack = tolerance * max(1.0, abs(want)) if name == "mean_distance" and want is not None else tolerance
            note(name, scores[name], want, where, slack)
        for name in BASELINES[:2]:
            note(name, scores[name], reference.baseline_mean(name), where)
        note("rare_word_baseline", scores["rare_word_baseline"], reference.baseline_mean("rare_word_baseline"), where)
        within("rare_word", scores["rare_word"], reference.shares.bounds(("rare_word", layer), h), where)
        best, weights = reference.positional(layer, h)
        positional = scores["positional"]
        offset = positional["offset"]
        rounded = sorted((round(w * 1e6) for w in weights.values() if w is not None), reverse=True)
        if offset != best and not (len(rounded) > 1 and rounded[0] - rounded[1] <= tolerance * 1e6):
            problems.append(f"{where} positional offset: headscan {offset}, transformers {best} ({weights})")
        note("positional.weight", positional["weight"], weights.get(offset), where)
        within("positional.argmax_rate", positional["argmax_rate"],
               reference.shares.bounds((f"argmax{offset:+d}", layer), h), where)

        # Labels the reference's scores give (syntactic and retrieval aside).
        expected, undecided = set(), set()

        def decide(label, value, passes, threshold):
            if value is None:
                return
            if abs(value - threshold) <= tolerance:
                undecided.add(label)
            elif passes(value):
                expected.add(label)

        for label, name, passes, threshold in label_rules(thresholds):
            decide(label, reference.mean(name, layer, h), passes, threshold)
        p_weight = weights.get(best)
        decide("positional", p_weight, lambda v: v > thresholds["positional"], thresholds["positional"])
        for kind in ("separator", "punctuation"):
            value, base = reference.mean(kind, layer, h), reference.baseline_mean(kind + "_baseline")
            if value is not None and base is not None:
                margin = thresholds[kind + "_margin"]
                if abs(value - thresholds[kind]) <= tolerance or abs(value - base - margin) <= tolerance:
                    undecided.add(kind)
                elif value > thresholds[kind] and value >= base + margin:
                    expected.add(kind)
        low, high = reference.shares.bounds(("rare_word", layer), h)
        base = reference.baseline_mean("rare_word_baseline")
        certain = low > thresholds["rare_word"] and low >= base + thresholds["rare_word_margin"]
        possible = high > thresholds["rare_word"] - tolerance and \
            high >= base + thresholds["rare_word_margin"] - tolerance
        if certain:
            expected.add("rare-word")
        elif possible:
            undecided.add("rare-word")
        checked = {rule[0] for rule in label_rules(thresholds)} | {"positional", "separator", "punctuation",
                                                                    "rare-word"}
        got = {label for label in head["labels"] if label in checked}
        near += len(undecided)
        if (got - undecided) != (expected - undecided):
            label_mismatches.append(f"{where} labels: headscan {sorted(got)}, transformers {sorted(expected)}"
                                    + (f" (undecided {sorted(undecided)})" if undecided else ""))
    problems += label_mismatches

    repeat_loss = [total / count for total, count in losses]
    for r, (got, want) in enumerate(zip(model_info["repeat_loss"], repeat_loss)):
        note("repeat_loss", got, want, f"repeat {r + 1}", slack=max(1e-3, 1e-4 * abs(want)))

    # ---- the model's induction heads
    induction = sorted(((reference.mean("induction", h["layer"], h["head"]), h["layer"], h["head"])
                        for h in heads["heads"]), reverse=True)
    labelled = sorted((h["layer"], h["head"]) for h in heads["heads"] if "induction" in h["labels"])
    found = [f"L{layer}H{head}" for layer, head in labelled]
    if len(labelled) < MIN_INDUCTION_HEADS:
        problems.append(f"only {len(labelled)} heads labelled induction ({found}), expected >= {MIN_INDUCTION_HEADS}")
    if any(layer < 15 for layer, _ in labelled):
        problems.append(f"induction heads below layer 15: {found}")
    strongest, top_layer, top_head = induction[0]
    if strongest < 0.8:
        problems.append(f"the strongest induction head (L{top_layer}H{top_head}) scores {strongest:.3f} < 0.8")
    if not repeat_loss[-1] < 0.25 * repeat_loss[0]:
        problems.append(f"repeat_loss {repeat_loss}: the model does not predict repeats from context")

    seconds = time.time() - began
    summary = {"max_difference": worst, "tolerance": tolerance, "argmax_eps": ARGMAX_EPS,
               "induction_heads": found, "strongest_induction": [f"L{top_layer}H{top_head}", strongest],
               "repeat_loss": repeat_loss, "labels_near_threshold": near, "sequences": len(records),
               "probes": len(probe_ids), "seconds": seconds, "forward_seconds": forward_seconds,
               "problems": problems}
    if args.summary:
        with open(args.summary, "w", encoding="utf-8") as f:
            json.dump(summary, f, indent=1)
    print(f"{len(heads['heads'])} heads ({len(layers)} layers x {n_heads}), {len(records)} windows "
          f"({heads['corpus']['tokens']} tokens), {len(probe_ids)} probes; reference {seconds:.0f} s "
          f"(forward calls {forward_seconds:.0f} s)")
    for name, value in worst.items():
        print(f"  max |difference| {name:32s} {value:.2e}")
    print(f"  induction heads: {' '.join(found)}; strongest L{top_layer}H{top_head} {strongest:.3f}; "
          f"repeat_loss {', '.join(f'{v:.3f}' for v in repeat_loss)}; {near} labels left undecided (within "
          f"{tolerance} of a threshold)")
    if problems:
        print(f"FAIL: {len(problems)} differences:\n  " + "\n  ".join(problems[:40]), file=sys.stderr)
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
