#!/usr/bin/env python3
"""Trains a GPT-2 style byte-level BPE tokenizer on a text file and writes it as a Hugging Face
tokenizer.json, for bench/tokenizer_speed (no network, no `tokenizers` library needed).

Usage: make_bpe_tokenizer.py TEXT OUT.json [--merges N]

Pre-tokenization is GPT-2's regex, the 256 base symbols are GPT-2's bytes_to_unicode alphabet,
and merges are learned by pair frequency over the distinct words (ties: the smaller pair), as the
tokenizers library's BpeTrainer does. The result has the same shape as gpt2's tokenizer.json.
"""
import argparse
import collections
import heapq
import json

import regex

GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def bytes_to_unicode():
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    mapping, extra = {}, 0
    for byte in range(256):
        if byte in keep:
            mapping[byte] = chr(byte)
        else:
            mapping[byte] = chr(256 + extra)
            extra += 1
    return mapping


def train(text_path, merges_wanted):
    alphabet = bytes_to_unicode()
    counts = collections.Counter()
    with open(text_path, encoding="utf-8", errors="replace") as text:
        for line in text:
            for word in regex.findall(GPT2_PATTERN, line.rstrip("\n")):
                counts["".join(alphabet[b] for b in word.encode("utf-8"))] += 1
    words = [list(word) for word in counts]
    freqs = [counts[word] for word in counts]

    pair_counts = collections.Counter()
    where = collections.defaultdict(set)  # pair -> indices of words containing it
    for index, symbols in enumerate(words):
        for pair in zip(symbols, symbols[1:]):
            pair_counts[pair] += freqs[index]
            where[pair].add(index)
    heap = [(-count, pair) for pair, count in pair_counts.items()]
    heapq.heapify(heap)

    merges = []
    while heap and len(merges) < merges_wanted:
        negative, pair = heapq.heappop(heap)
        if pair_counts.get(pair, 0) != -negative:  # stale entry: push the current count back
            if pair_counts.get(pair, 0) > 0:
                heapq.heappush(heap, (-pair_counts[pair], pair))
            continue
        if -negative < 2:
            break
        merges.append(pair)
        merged = pair[0] + pair[1]
        touched = set()
        for index in list(where[pair]):
            symbols, freq = words[index], freqs[index]
            for old in zip(symbols, symbols[1:]):
                pair_counts[old] -= freq
            out, i = [], 0
            while i < len(symbols):
                if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
                    out.append(merged)
                    i += 2
                else:
                    out.append(symbols[i])
                    i += 1
            words[index] = out
            for new in zip(out, out[1:]):
                pair_counts[new] += freq
                where[new].add(index)
                touched.add(new)
        for new in touched:
            if pair_counts[new] > 0:
                heapq.heappush(heap, (-pair_counts[new], new))
        del pair_counts[pair]
    return alphabet, merges


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("text")
    parser.add_argument("out")
    parser.add_argument("--merges", type=int, default=20000)
    args = parser.parse_args()
    alphabet, merges = train(args.text, args.merges)

    vocab = {}
    for byte in range(256):
        vocab.setdefault(alphabet[byte], len(vocab))
    for left, right in merges:
        vocab.setdefault(left + right, len(vocab))
    eos = len(vocab)
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    spec = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": eos, "content": "<|endoftext|>", "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": True, "special": True}],
        "normalizer": None, "pre_tokenizer": byte_level, "post_processor": byte_level, "decoder": byte_level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False,
                  "vocab": vocab, "merges": [f"{a} {b}" for a, b in merges]},
    }
    with open(args.out, "w", encoding="utf-8") as out:
        json.dump(spec, out, ensure_ascii=False)
    print(f"{args.out}: {len(vocab) + 1} tokens, {len(merges)} merges")


if __name__ == "__main__":
    main()
