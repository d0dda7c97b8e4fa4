#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/): small valid inputs
of every kind each parser reads. Run again after changing it; the SentencePiece seed needs
Debian's spm_train (package sentencepiece)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")

TEXTS = [
    "The cat sat on the mat.",
    "héllo wörld, naïve café",
    "Привет, мир! Как дела?",
    "你好，世界。今日は良い天気です。",
    "مرحبا بالعالم",
    "नमस्ते दुनिया",
    "emoji 😀👍🏽 and tabs\tand  spaces",
    "numbers 1234 5.67 and punctuation!?",
]


def write(target, name, data):
    os.makedirs(os.path.join(CORPUS, target), exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    with open(os.path.join(CORPUS, target, name), "wb") as f:
        f.write(data)


def byte_level_alphabet():
    # GPT-2's bytes_to_unicode.
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for c in cs]


def tokenizer(model, normalizer=None, pre_tokenizer=None, added=(), post_processor=None):
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": list(added),
            "normalizer": normalizer, "pre_tokenizer": pre_tokenizer, "post_processor": post_processor,
            "decoder": None, "model": model}


def added(id_, content, special=True):
    return {"id": id_, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": not special, "special": special}


def tokenizer_seeds():
    alphabet = byte_level_alphabet()
    vocab = {c: i for i, c in enumerate(alphabet)}
    merges = [["Ġ", "t"], ["h", "e"], ["Ġt", "he"], ["a", "t"], ["c", "at"], ["Ġ", "cat"]]
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    gpt2 = tokenizer({"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                      "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "vocab": vocab,
                      "merges": [" ".join(m) for m in merges]},
                     pre_tokenizer={"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                                    "use_regex": True},
                     added=[added(len(vocab), "<|endoftext|>")])
    pieces = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)] + ["▁", "▁the", "▁cat", "t", "h", "e",
                                                                              "c", "a", "▁t", "th", "he", "at"]
    llama_vocab = {p: i for i, p in enumerate(pieces)}
    llama = tokenizer({"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                       "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "vocab": llama_vocab,
                       "merges": ["▁ t", "t h", "h e", "▁t he", "a t", "c at", "▁ cat"]},
                      normalizer={"type": "Sequence", "normalizers": [
                          {"type": "Prepend", "prepend": "▁"}, {"type": "Replace", "pattern": {"String": " "},
                                                               "content": "▁"}]},
                      added=[added(0, "<unk>"), added(1, "<s>"), added(2, "</s>")],
                      post_processor={"type": "TemplateProcessing",
                                      "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                                 {"Sequence": {"id": "A", "type_id": 0}}],
                                      "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [1],
                                                                             "tokens": ["<s>"]}}})
    metaspace = tokenizer({"type": "BPE", "vocab": llama_vocab, "merges": [["▁", "t"], ["t", "h"]],
                           "byte_fallback": True, "unk_token": "<unk>"},
                          pre_tokenizer={"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first",
                                         "split": True})
    bert_vocab = {w: i for i, w in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat",
                                              "on", "mat", ".", ",", "##s", "##at", "c", "h", "hello", "world"])}
    bert = tokenizer({"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                      "max_input_chars_per_word": 100, "vocab": bert_vocab},
                     normalizer={"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                                 "strip_accents": None, "lowercase": True},
                     pre_tokenizer={"type": "BertPreTokenizer"},
                     added=[added(i, t) for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])],
                     post_processor={"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]})
    unigram = tokenizer({"type": "Unigram", "unk_id": 0, "byte_fallback": False,
                         "vocab": [["<unk>", 0.0], ["▁", -2.0], ["▁the", -3.0], ["▁cat", -4.0], ["t", -5.0],
                                   ["h", -5.0], ["e", -5.0], ["a", -5.5], ["c", -5.5], ["at", -4.5], ["世", -6.0]]},
                        normalizer={"type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "Lowercase"}]},
                        pre_tokenizer={"type": "Metaspace", "replacement": "▁", "add_prefix_space": True})
    wordlevel = tokenizer({"type": "WordLevel", "vocab": {"<unk>": 0, "the": 1, "cat": 2, ".": 3, "sat": 4},
                           "unk_token": "<unk>"},
                          normalizer={"type": "Lowercase"},
                          pre_tokenizer={"type": "Sequence", "pretokenizers": [
                              {"type": "WhitespaceSplit"}, {"type": "Punctuation", "behavior": "Isolated"},
                              {"type": "Digits", "individual_digits": True}]})
    split = tokenizer({"type": "WordLevel", "vocab": {"<unk>": 0, "a": 1}, "unk_token": "<unk>"},
                      normalizer={"type": "Replace", "pattern": {"Regex": "\\s+"}, "content": " "},
                      pre_tokenizer={"type": "Split", "pattern": {"Regex":
                          "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"},
                                     "behavior": "Isolated", "invert": False})
    text = "\n".join(TEXTS)
    for name, spec in [("bpe_byte_level", gpt2), ("bpe_byte_fallback", llama), ("bpe_metaspace", metaspace),
                       ("wordpiece", bert), ("unigram", unigram), ("wordlevel", wordlevel), ("split_regex", split)]:
        write("tokenizer_json", name, json.dumps(spec, ensure_ascii=False) + "\0" + text)


def sentencepiece_seeds():
    spm_train = shutil.which("spm_train")
    if spm_train is None:
        print("spm_train missing (apt-get install sentencepiece): SentencePiece seeds not written", file=sys.stderr)
        return
    with tempfile.TemporaryDirectory() as tmp:
        text = os.path.join(tmp, "text.txt")
        with open(text, "w", encoding="utf-8") as f:  # Latin text only: a few dozen pieces
            for i in range(40):
                f.write(TEXTS[i % 2] + "\n")
        # identity normalization: no 240 kB NFKC table in the model, so the seeds stay small.
        for model_type, size, byte_fallback in [("unigram", 40, False), ("bpe", 300, True), ("char", 40, False)]:
            prefix = os.path.join(tmp, model_type)
            subprocess.run([spm_train, f"--input={text}", f"--model_prefix={prefix}", f"--vocab_size={size}",
                            f"--model_type={model_type}", f"--byte_fallback={str(byte_fallback).lower()}",
                            "--character_coverage=1.0", "--hard_vocab_limit=false",
                            "--normalization_rule_name=identity", "--minloglevel=2"],
                           check=True, capture_output=True)
            with open(prefix + ".model", "rb") as f:
                write("sentencepiece_model", model_type + ".model", f.read())


def conllu_seeds():
    write("conllu", "ranges_and_empty_nodes.conllu", """# sent_id = 1
# text = Vámonos al mar.
1-2\tVámonos\t_\t_\t_\t_\t_\t_\t_\t_
1\tVamos\tir\tVERB\t_\t_\t0\troot\t_\t_
2\tnos\tnosotros\tPRON\t_\t_\t1\tobj\t_\t_
3-4\tal\t_\t_\t_\t_\t_\t_\t_\t_
3\ta\ta\tADP\t_\t_\t5\tcase\t_\t_
4\tel\tel\tDET\t_\t_\t5\tdet\t_\t_
5\tmar\tmar\tNOUN\t_\t_\t1\tobl\t_\tSpaceAfter=No
5.1\tfue\tir\tVERB\t_\t_\t_\t_\t1:conj\t_
6\t.\t.\tPUNCT\t_\t_\t1\tpunct\t_\t_

# sent_id = 2
1\tThe\tthe\tDET\t_\t_\t2\tdet\t_\t_
2\tcat\tcat\tNOUN\t_\t_\t3\tnsubj\t_\t_
3\tsat\tsit\tVERB\t_\t_\t0\troot\t_\tSpaceAfter=No
4\t.\t.\tPUNCT\t_\t_\t3\tpunct\t_\t_

""")
    write("conllu", "scripts_crlf.conllu", "# text = 你好世界\r\n1\t你好\t你好\tINTJ\t_\t_\t2\tdiscourse\t_\tSpaceAfter=No\r\n"
          "2\t世界\t世界\tNOUN\t_\t_\t0\troot\t_\t_\r\n\r\n1\tПривет\tпривет\tINTJ\t_\t_\t0\troot\t_\t_\r\n"
          "2\tмир\tмир\tNOUN\t_\t_\t1\tobl:tmod\t_\t_\r\n")
    write("conllu", "underscores.conllu", "1\tword\t_\t_\t_\t_\t_\t_\t_\t_\n2\tother\t_\t_\t_\t_\t1\t_\t_\t_\n")


def text_seeds():
    # The first byte is the window length (2 + b % 16; BOS when b ≥ 128), the rest the file.
    write("text_corpus", "scripts.txt", b"\x85" + "\n".join(TEXTS).encode("utf-8") + b"\n")
    write("text_corpus", "bom_crlf.txt", b"\x03\xef\xbb\xbfthe cat\r\n\r\nsat on the mat\r\n")
    write("text_corpus", "invalid_utf8.txt", b"\x02caf\xe9 \xc3\x28 \xf0\x9f\x98 ok \xed\xa0\x80 \xf4\x90\x80\x80\n")
    write("text_corpus", "long_line.txt", b"\x90" + b"the cat " * 200 + b"\n")


def headscan_json_seeds():
    write("headscan_json", "full.json", json.dumps({"name": "gpt2", "bos_token": "<|endoftext|>", "max_length": 1024,
                                                    "causal": True, "n_kv_heads": 4}))
    write("headscan_json", "nulls.json", '{"name": null, "max_length": null, "causal": false}')
    write("headscan_json", "empty.json", "{}")


def idf_seeds():
    write("idf", "idf.txt", 'headscan-idf 1\ndocuments 10\n3 "the"\n10 "cat"\n1 "\\u0120the"\n2 "世界"\n'
          '5 "unknown"\n')
    write("idf", "empty.txt", "headscan-idf 1\ndocuments 0\n")


def option_seeds():
    write("option_values", "thresholds.txt", "previous_token=0.6\ninduction=1\nsyntactic_support=20\nentropy=0")
    write("option_values", "exponent.txt", "rare_word=5e-1")
    write("option_values", "shard.txt", "3/8")
    write("option_values", "steps.txt", "0,500,1000")


def shard_state_seeds():
    # A model of 1 layer and 2 heads, windows of 16 tokens; shard 0 ran the 10 probes and 4 needle
    # probes (22 copy events).
    layers, heads, max_length = 1, 2, 16

    def exact(value):
        return [0, int(value * 2 ** 40)]

    def means(count, values):
        return {"sums": [[exact(count * value) for value in values] for _ in range(layers)], "counts": [count] * layers}

    def statistics(tokens, sequences, probe_queries, needle_queries, relations):
        corpus, later = tokens, tokens - sequences
        return {
            "previous_token": means(later, [0.9, 0.1]),
            "positional": {d: {"weight": means(later, [0.5, 0.2]), "argmax": means(later, [0.5, 0.0])}
                           for d in ("-1", "1", "-2", "2")},
            "first_token": means(later, [0.05, 0.75]),
            "entropy": means(corpus, [0.25, 0.5]),
            "confidence": means(corpus, [0.875, 0.5]),
            "mean_distance": means(corpus, [1.0, 3.5]),
            "self": means(corpus, [0.125, 0.25]),
            "induction": means(probe_queries, [0.0, 0.5]),
            "duplicate_token": means(probe_queries, [0.25, 0.0]),
            "induction_text": means(2, [0.5, 0.25]),
            "rare_word": {"means": means(4, [0.5, 0.25]), "baseline": {"sum": exact(4 * 0.375), "count": 4}},
            "syntactic": {"layers": layers, "heads": heads, "relations": relations},
            "separator": {"means": means(later, [0.75, 0.0]), "baseline": {"sum": exact(later * 0.125), "count": later}},
            "punctuation": {"means": means(later, [0.125, 0.5]), "baseline": {"sum": exact(later * 0.25), "count": later}},
            "streaming": means(0, [0.0, 0.0]),
            "streaming_duo": means(0, [0.0, 0.0]),
            "retrieval": means(needle_queries, [1.0, 0.0]),
        }

    def state(index, count, examples, relations=None):
        tokens, sequences = 12, 3
        probes = 10 if index == 0 else 0
        parsed = 3 if relations else 0
        return {
            "format": "headscan-shard", "version": 1, "headscan_version": "0.1.0",
            "shard": {"index": index, "count": count, "slice": "bytes"},
            "agree": {"headscan_version": "0.1.0", "model": {"sha256": "ab" * 32}, "max_length": max_length,
                      "seed": 0, "thresholds": {"previous_token": 0.5},
                      "shape": {"layers": layers, "heads": heads, "causal": True}},
            "shape": {"layers": layers, "heads": heads, "causal": True},
            "counts": {"lines": 3, "documents": 3, "sequences": sequences, "tokens": tokens,
                       "lines_with_invalid_utf8": 0, "invalid_utf8_replacements": 0, "sentences": parsed,
                       "parsed_sentences": parsed},
            "statistics": statistics(tokens, sequences, 20 if probes else 0, 22 if probes else 0, relations or {}),
            "document": {"headscan_version": "0.1.0", "model": {"layers": layers, "heads": heads, "kv_heads": 2},
                         "corpus": {"path": "c.txt"}, "probes": {"count": probes},
                         "retrieval": {"probes": 4 if probes else 0},
                         "thresholds": {"previous_token": 0.5}, "heads": []},
            "warnings": ["a warning"],
            "examples": [{"key": [index, i], "source": f"corpus line {i + 1}", "tokens": ["<s>", "w1"],
                          "special": [True, False], "offset": 8 * i} for i in range(examples)],
            "probe_examples": [],
            "example_floats": 8 * examples,
            "seconds": 1.5,
            "phases": {"load": 0.5, "corpus": 1.0},
        }

    nsubj = {"d2h": {"support": 3, "offsets": [[-2, 1], [-1, 2]], "correct": [2, 0]},
             "h2d": {"support": 1, "offsets": [[-1, 1]], "correct": [0, 1]}}
    write("shard_state", "state.json", json.dumps(state(0, 2, 2), indent=1))
    write("shard_state", "empty.json", json.dumps(state(1, 2, 0)))
    write("shard_state", "relations.json", json.dumps(state(1, 2, 1, {"nsubj": nsubj, "obl": {"d2h": nsubj["d2h"]}})))

    # Damaged states the reader refuses (issue 23), as starting points for mutations.
    def damaged(name, edit):
        damaged_state = state(1, 2, 2, {"nsubj": nsubj})
        edit(damaged_state)
        write("shard_state", name, json.dumps(damaged_state))

    damaged("fractional_count.json", lambda s: s["statistics"]["confidence"].update(counts=[1.5]))
    damaged("float_count.json", lambda s: s["statistics"]["rare_word"]["baseline"].update(count=4.0))
    damaged("too_many_queries.json", lambda s: s["statistics"]["confidence"].update(counts=[4398046511104]))
    damaged("mean_above_one.json", lambda s: s["statistics"]["self"].update(counts=[1]))
    damaged("sum_without_queries.json", lambda s: s["statistics"]["entropy"].update(counts=[0]))
    damaged("unknown_statistic.json", lambda s: s["statistics"].update(attention_sink={"sums": [], "counts": []}))
    damaged("garbage_relation.json", lambda s: s["statistics"]["syntactic"]["relations"].update(
        {"": {"x2y": {"support": 1, "offsets": [[5, 2]], "correct": [3]}}}))
    damaged("version.json", lambda s: s.update(headscan_version="9.9.9"))
    damaged("seconds.json", lambda s: s.update(seconds=-1e308))
    damaged("same_offset.json", lambda s: s["examples"][1].update(offset=0))


def compare_run_seeds():
    def head(layer, head, primary, labels, scores, **extra):
        return {"layer": layer, "head": head, "kv_group": head, "primary": primary, "labels": labels,
                "scores": scores, **extra}
    syntactic = {"nsubj": {"direction": "d2h", "accuracy": 0.6, "baseline": 0.2, "baseline_offset": -1,
                           "support": 30, "passed": True}}
    report = {
        "headscan_version": "0.1.0",
        "model": {"name": "m", "layers": 1, "heads": 2, "kv_heads": 1, "causal": True, "step": 500,
                  "repeat_loss": [4.1, 0.4, 0.1, 0.1]},
        "thresholds": {"induction": 0.4},
        "heads": [
            head(0, 1, "induction", ["induction"], {"induction": 0.9, "entropy": 1.5, "importance": 0.2,
                                                     "ablation_loss": -0.01},
                 circuit={"score": 0.9, "baseline": 0.9, "depends_on": []}),
            head(0, 0, "previous-token", ["previous-token", "positional"],
                 {"previous_token": 0.97, "positional": {"offset": -1, "weight": 0.97, "argmax_rate": 1.0},
                  "induction": None, "syntactic": syntactic}),
        ],
        "ablation": {"sequences": 4, "objective": "next-token", "loss": 3.5,
                     "pruning": {"step": 0.1, "random_orders": 1,
                                 "points": [{"fraction": 0.0, "importance_order": 3.5, "random_order": 3.5}]}},
    }
    write("compare_run", "heads.json", json.dumps(report, indent=1))
    write("compare_run", "minimal.json", json.dumps({"model": {"layers": 1, "heads": 1},
                                                     "heads": [head(0, 0, "none", [], {})]}))
    # A hybrid: every layer of the model listed, heads only in its attention layer 1.
    layers = [{"index": 0, "path": "model.layers.0", "kind": "linear attention"},
              {"index": 1, "path": "model.layers.1", "kind": "attention"}]
    write("compare_run", "hybrid.json", json.dumps({"model": {"layers": layers, "heads": 1},
                                                    "heads": [head(1, 0, "none", [], {})]}))


def main():
    if os.path.isdir(CORPUS):
        shutil.rmtree(CORPUS)
    tokenizer_seeds()
    sentencepiece_seeds()
    conllu_seeds()
    text_seeds()
    headscan_json_seeds()
    idf_seeds()
    option_seeds()
    shard_state_seeds()
    compare_run_seeds()


if __name__ == "__main__":
    main()
