#!/usr/bin/env python3
"""Build the model and corpus of headscan's overhead benchmark (bench/run_overhead.sh).

Run with the venv's Python (scripts/setup.sh):
    .venv/bin/python bench/make_gpt2_small.py OUT_DIR [--lines N] [--min-words A] [--max-words B]
        [--layers L --heads H --d-model D]

Writes into OUT_DIR:
  gpt2_small.pt   a GPT-2-small-shaped causal transformer with random weights (seeded): 12 layers,
                  12 heads, d_model 768, MLP 3072, vocabulary 50257, context 1024, tied input and
                  output embedding, eager attention (softmax over [B,H,T,T] after a causal
                  masked_fill(-inf)); forward(input_ids) -> logits [B,T,V]; scripted, with
                  tokenizer.json (WordLevel over "<s>", "<unk>", w0..w50254) and headscan.json
                  embedded. About 500 MB on disk (124M float32 parameters).
  corpus.txt      random words (uniform over the vocabulary), one document per line, each line
                  a uniformly drawn number of words in [min-words, max-words].

With --pt2 it also writes the same module, the same weights, as an exported program (.pt2 beside
the .pt, through headscan.export: headscan's Python package must be importable, e.g.
PYTHONPATH=build/python), for comparing the two formats (bench/run_overhead.sh --formats).

The weights do not matter for the benchmark (attention with random weights is close to uniform);
what matters is that the shapes, and so the forward work and the attention tensors headscan
receives, are those of GPT-2 small. --layers, --heads and --d-model give other GPT-2 shapes (MLP
4 × d_model); the model is then gpt2_L{layers}_H{heads}_D{d_model}.pt.
"""

import argparse
import json
import math
import os
import random

import torch
import torch.nn as nn
import torch.nn.functional as F

SEED = 1234
N_LAYERS = 12
N_HEADS = 12
D_MODEL = 768
D_MLP = 3072
VOCAB = 50257
CONTEXT = 1024
SPECIALS = ["<s>", "<unk>"]


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        # Sizes are read from the module globals, which main() sets from the command line.
        self.n_heads = N_HEADS
        self.d_head = D_MODEL // N_HEADS
        self.c_attn = nn.Linear(D_MODEL, 3 * D_MODEL)
        self.c_proj = nn.Linear(D_MODEL, D_MODEL)
        # GPT-2's "bias" buffer: True above the diagonal, where a query must not look.
        self.register_buffer("future", torch.ones(CONTEXT, CONTEXT, dtype=torch.bool).triu(1), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, D = x.shape
        qkv = self.c_attn(x).view(B, T, 3, self.n_heads, self.d_head).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]                                          # [B,H,T,dh]
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.d_head)   # [B,H,T,T]
        scores = scores.masked_fill(self.future[:T, :T], float("-inf"))
        probs = torch.softmax(scores, dim=-1)                                     # [B,H,T,T]
        y = torch.matmul(probs, v).transpose(1, 2).reshape(B, T, D)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(D_MODEL)
        self.attn = Attention()
        self.ln_2 = nn.LayerNorm(D_MODEL)
        self.c_fc = nn.Linear(D_MODEL, D_MLP)
        self.c_proj = nn.Linear(D_MLP, D_MODEL)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT2Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, D_MODEL)
        self.wpe = nn.Embedding(CONTEXT, D_MODEL)
        self.blocks = nn.ModuleList([Block() for _ in range(N_LAYERS)])
        self.ln_f = nn.LayerNorm(D_MODEL)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        T = input_ids.size(1)
        positions = torch.arange(T, device=input_ids.device)
        x = self.wte(input_ids) + self.wpe(positions)
        for block in self.blocks:
            x = block(x)
        return F.linear(self.ln_f(x), self.wte.weight)   # tied output embedding


def init_weights(model: nn.Module) -> None:
    """GPT-2's initialisation: N(0, 0.02), residual projections scaled by 1/sqrt(2 * layers)."""
    for name, p in model.named_parameters():
        if name.endswith("bias"):
            nn.init.zeros_(p)
        elif "ln" in name:
            nn.init.ones_(p)
        elif name.endswith("c_proj.weight"):
            nn.init.normal_(p, std=0.02 / math.sqrt(2 * N_LAYERS))
        else:
            nn.init.normal_(p, std=0.02)


def tokenizer_json(words):
    vocab = {tok: i for i, tok in enumerate(SPECIALS)}
    for w in words:
        vocab[w] = len(vocab)
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": i, "content": tok, "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": False, "special": True} for i, tok in enumerate(SPECIALS)],
        "normalizer": None,
        "pre_tokenizer": {"type": "WhitespaceSplit"},
        "post_processor": None,
        "decoder": None,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "<unk>"},
    }


def main() -> None:
    global N_LAYERS, N_HEADS, D_MODEL, D_MLP
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir")
    parser.add_argument("--lines", type=int, default=48, help="documents in the corpus")
    parser.add_argument("--min-words", type=int, default=128, help="shortest document, in words")
    parser.add_argument("--max-words", type=int, default=1023, help="longest document, in words")
    parser.add_argument("--force", action="store_true", help="rebuild the model even if it exists")
    parser.add_argument("--layers", type=int, default=N_LAYERS)
    parser.add_argument("--heads", type=int, default=N_HEADS)
    parser.add_argument("--d-model", type=int, default=D_MODEL)
    parser.add_argument("--pt2", action="store_true", help="also write the model as an exported program (.pt2)")
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)

    default_shape = (args.layers, args.heads, args.d_model) == (N_LAYERS, N_HEADS, D_MODEL)
    N_LAYERS, N_HEADS, D_MODEL, D_MLP = args.layers, args.heads, args.d_model, 4 * args.d_model
    words = [f"w{i}" for i in range(VOCAB - len(SPECIALS))]
    name = "gpt2_small.pt" if default_shape else f"gpt2_L{N_LAYERS}_H{N_HEADS}_D{D_MODEL}.pt"
    model_path = os.path.join(args.out_dir, name)
    program_path = model_path + "2"
    meta = {"name": "gpt2-small-random", "bos_token": "<s>", "max_length": CONTEXT}
    wanted = [model_path] + ([program_path] if args.pt2 else [])
    if args.force or not all(os.path.exists(path) for path in wanted):
        torch.manual_seed(SEED)
        model = GPT2Small()
        init_weights(model)
        model.eval()
        scripted = torch.jit.script(model)
        torch.jit.save(scripted, model_path + ".tmp", _extra_files={
            "tokenizer.json": json.dumps(tokenizer_json(words)),
            "headscan.json": json.dumps(meta)})
        os.replace(model_path + ".tmp", model_path)
        params = sum(p.numel() for p in model.parameters())
        print(f"model: {model_path} ({params / 1e6:.1f}M parameters, "
              f"{os.path.getsize(model_path) / 2**20:.0f} MiB)")
        if args.pt2:
            import tokenizers

            import headscan

            tokenizer = tokenizers.Tokenizer.from_str(json.dumps(tokenizer_json(words)))
            headscan.export(model, program_path, tokenizer=tokenizer, metadata={**meta, "causal": True},
                            max_length=CONTEXT)
            print(f"model: {program_path} (the same module exported with torch.export, "
                  f"{os.path.getsize(program_path) / 2**20:.0f} MiB)")

    rng = random.Random(SEED)
    corpus_path = os.path.join(args.out_dir, "corpus.txt")
    total = 0
    with open(corpus_path, "w", encoding="utf-8") as f:
        for _ in range(args.lines):
            n = rng.randint(args.min_words, args.max_words)
            total += n
            f.write(" ".join(words[rng.randrange(len(words))] for _ in range(n)) + "\n")
    print(f"corpus: {corpus_path} ({args.lines} documents, {total} words, "
          f"{os.path.getsize(corpus_path) / 2**10:.0f} KiB)")


if __name__ == "__main__":
    main()
