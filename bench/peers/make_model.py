#!/usr/bin/env python3
"""The model, tokenizer and corpus every tool of the peers benchmark runs on (bench/peers/run.sh).

    .venv/bin/python bench/peers/make_model.py WORK_DIR [--sequences 96] [--tokens 256] [--seed 1234]

Writes into WORK_DIR:
  model/        a transformers GPT2LMHeadModel, 6 layers, 8 heads, d_model 512, vocabulary 50257,
                1024 positions, random weights (torch.manual_seed(seed)), saved with save_pretrained
                with its tokenizer (tokenizer.json, BOS = EOS = <|endoftext|>, id 50256);
  tokenizer.json
                a GPT-2 style byte-level BPE of 50,000 merges trained by bench/make_bpe_tokenizer.py
                on English text found on this machine (vim's help files, then Python's standard
                library sources: about 20 MB, read in sorted order), reused when WORK_DIR has it;
  corpus.txt    SEQUENCES lines of English from bench/peers/english.py's seeded grammar, each line
                exactly TOKENS - 1 tokens, so that headscan frames each line as one window of BOS +
                the line = TOKENS tokens (--max-length TOKENS) and the peers, prepending BOS as
                TransformerLens does, get the same ids;
  windows.json  {"bos": id, "windows": [[ids of window 1], ...]}: the ids every tool runs.
"""

import argparse
import glob
import json
import os
import subprocess
import sys
import sysconfig

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import english  # noqa: E402

MERGES = 50000
EOS = "<|endoftext|>"


def training_text(path: str) -> None:
    files = sorted(glob.glob("/usr/share/vim/vim*/doc/*.txt"))
    stdlib = sysconfig.get_paths()["stdlib"]
    for folder, dirs, names in os.walk(stdlib):
        dirs[:] = sorted(d for d in dirs if d not in ("test", "tests", "site-packages", "idlelib"))
        files += [os.path.join(folder, name) for name in sorted(names) if name.endswith(".py")]
    with open(path, "wb") as out:
        for name in files:
            with open(name, "rb") as source:
                out.write(source.read())
                out.write(b"\n")


def make_tokenizer(work: str) -> str:
    path = os.path.join(work, "tokenizer.json")
    if os.path.exists(path):
        return path
    text = os.path.join(work, "tokenizer-text.txt")
    training_text(text)
    subprocess.run([sys.executable, os.path.join(HERE, "..", "make_bpe_tokenizer.py"), text, path + ".part",
                    "--merges", str(MERGES)], check=True)
    os.remove(text)
    with open(path + ".part", encoding="utf-8") as spec:
        merges = len(json.load(spec)["model"]["merges"])
    if merges != MERGES:
        os.remove(path + ".part")
        sys.exit(f"make_model.py: the training text gave {merges} merges, not {MERGES}: "
                 "a vocabulary of 50257 needs more text")
    os.replace(path + ".part", path)
    return path


def make_corpus(tokenizer, sequences: int, room: int, seed: int):
    """Lines of exactly `room` tokens, whole sentences each."""
    grammar = english.Grammar(seed)
    count = lambda text: len(tokenizer.encode(text).ids)  # noqa: E731
    lines = []
    while len(lines) < sequences:
        sentences = []
        while True:
            have = count(" ".join(sentences)) if sentences else 0
            if have == room:
                break
            for _ in range(200):
                candidate = grammar.sentence()
                total = count(" ".join(sentences + [candidate]))
                if total == room or total <= room - 4:
                    sentences.append(candidate)
                    break
            else:
                sentences.pop()  # no sentence fits the rest exactly: make more room
        lines.append(" ".join(sentences))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("work")
    parser.add_argument("--sequences", type=int, default=96)
    parser.add_argument("--tokens", type=int, default=256, help="tokens per window, BOS included")
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)

    import torch
    from tokenizers import Tokenizer
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    tokenizer_path = make_tokenizer(args.work)
    tokenizer = Tokenizer.from_file(tokenizer_path)
    bos = tokenizer.token_to_id(EOS)
    if bos != 50256:
        sys.exit(f"make_model.py: {EOS} is id {bos} in {tokenizer_path}, expected 50256")

    lines = make_corpus(tokenizer, args.sequences, args.tokens - 1, args.seed)
    with open(os.path.join(args.work, "corpus.txt"), "w", encoding="utf-8") as corpus:
        corpus.write("\n".join(lines) + "\n")
    windows = [[bos] + tokenizer.encode(line).ids for line in lines]
    assert all(len(w) == args.tokens for w in windows)
    with open(os.path.join(args.work, "windows.json"), "w", encoding="utf-8") as out:
        json.dump({"bos": bos, "windows": windows}, out)

    torch.manual_seed(args.seed)
    config = GPT2Config(vocab_size=50257, n_positions=1024, n_embd=512, n_layer=6, n_head=8,
                        bos_token_id=bos, eos_token_id=bos)
    model = GPT2LMHeadModel(config).eval()
    model_dir = os.path.join(args.work, "model")
    model.save_pretrained(model_dir)
    fast = PreTrainedTokenizerFast(tokenizer_file=tokenizer_path, bos_token=EOS, eos_token=EOS,
                                   unk_token=EOS, model_max_length=1024)
    fast.save_pretrained(model_dir)
    print(f"{model_dir}: GPT-2 6 x 8 x 512, vocabulary 50257; corpus.txt: {len(lines)} lines of "
          f"{args.tokens - 1} tokens")


if __name__ == "__main__":
    main()
