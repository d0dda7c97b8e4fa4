#!/usr/bin/env python3
"""Build the models and corpora of headscan's GPU benchmark (bench/run_gpu.sh).

    python3 bench/make_gpu_models.py OUT_DIR [--batches N] [--only NAME...]

Writes into OUT_DIR, each model with random weights (seeded), scripted (torch.jit.script), eager
attention (softmax over [B, H, T, T] in float32, as Hugging Face's eager attention computes it),
with a WordLevel tokenizer.json ("<s>", "<unk>", w0, w1, ...) and headscan.json embedded:
  gpt2_small.pt   GPT-2 small's shape in float32: 12 layers, 12 heads, d_model 768, MLP 3072,
                  vocabulary 50257, context 1024, tied output embedding.
  llama3_8b_4l.pt Llama-3-8B's shape, 4 of its 32 layers, in bfloat16: d_model 4096, 32 query
                  heads, 8 key/value heads (grouped-query attention), head size 128, SwiGLU MLP
                  14336, RMSNorm, rotary embeddings (theta 500000), vocabulary 128256, context
                  4096, untied output embedding. About 3.8 GB on disk.
and for every benchmark case a corpus of N batches: corpus_{model}_{B}x{T}.txt holds B * N lines of
T - 1 random words, each one window of T tokens with BOS, so every batch is B x T.
The weights do not matter for the speed: the shapes, and so the forward's work and the attention
headscan receives, are those of the real models.
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
SPECIALS = ["<s>", "<unk>"]
CASES = [("gpt2_small", 8, 1024), ("llama3_8b_4l", 8, 1024), ("llama3_8b_4l", 2, 4096)]


class GPT2Attention(nn.Module):
    def __init__(self, d_model: int, heads: int, context: int):
        super().__init__()
        self.heads = heads
        self.d_head = d_model // heads
        self.c_attn = nn.Linear(d_model, 3 * d_model)
        self.c_proj = nn.Linear(d_model, d_model)
        self.register_buffer("future", torch.ones(context, context, dtype=torch.bool).triu(1), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, D = x.shape
        qkv = self.c_attn(x).view(B, T, 3, self.heads, self.d_head).permute(2, 0, 3, 1, 4)
        scores = torch.matmul(qkv[0], qkv[1].transpose(-2, -1)) / math.sqrt(self.d_head)
        scores = scores.masked_fill(self.future[:T, :T], float("-inf"))
        probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(x.dtype)
        return self.c_proj(torch.matmul(probs, qkv[2]).transpose(1, 2).reshape(B, T, D))


class GPT2Block(nn.Module):
    def __init__(self, d_model: int, heads: int, context: int):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d_model)
        self.attn = GPT2Attention(d_model, heads, context)
        self.ln_2 = nn.LayerNorm(d_model)
        self.c_fc = nn.Linear(d_model, 4 * d_model)
        self.c_proj = nn.Linear(4 * d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT2(nn.Module):
    def __init__(self, layers=12, heads=12, d_model=768, vocab=50257, context=1024):
        super().__init__()
        self.wte = nn.Embedding(vocab, d_model)
        self.wpe = nn.Embedding(context, d_model)
        self.blocks = nn.ModuleList([GPT2Block(d_model, heads, context) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d_model)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(input_ids.size(1), device=input_ids.device)
        x = self.wte(input_ids) + self.wpe(positions)
        for block in self.blocks:
            x = block(x)
        return F.linear(self.ln_f(x), self.wte.weight)


class RMSNorm(nn.Module):
    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d_model))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        wide = x.float()
        wide = wide * torch.rsqrt(wide.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * wide.to(x.dtype)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.size(-1) // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class LlamaAttention(nn.Module):
    def __init__(self, d_model: int, heads: int, kv_heads: int):
        super().__init__()
        self.heads = heads
        self.kv_heads = kv_heads
        self.d_head = d_model // heads
        self.q_proj = nn.Linear(d_model, heads * self.d_head, bias=False)
        self.k_proj = nn.Linear(d_model, kv_heads * self.d_head, bias=False)
        self.v_proj = nn.Linear(d_model, kv_heads * self.d_head, bias=False)
        self.o_proj = nn.Linear(heads * self.d_head, d_model, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, future: torch.Tensor) -> torch.Tensor:
        B, T, D = x.shape
        q = self.q_proj(x).view(B, T, self.heads, self.d_head).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.kv_heads, self.d_head).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.kv_heads, self.d_head).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        group = self.heads // self.kv_heads
        k = k.repeat_interleave(group, dim=1)
        v = v.repeat_interleave(group, dim=1)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.d_head)
        scores = scores.masked_fill(future, float("-inf"))
        probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(x.dtype)
        return self.o_proj(torch.matmul(probs, v).transpose(1, 2).reshape(B, T, D))


class LlamaBlock(nn.Module):
    def __init__(self, d_model: int, heads: int, kv_heads: int, d_mlp: int):
        super().__init__()
        self.input_layernorm = RMSNorm(d_model)
        self.self_attn = LlamaAttention(d_model, heads, kv_heads)
        self.post_attention_layernorm = RMSNorm(d_model)
        self.gate_proj = nn.Linear(d_model, d_mlp, bias=False)
        self.up_proj = nn.Linear(d_model, d_mlp, bias=False)
        self.down_proj = nn.Linear(d_mlp, d_model, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, future: torch.Tensor) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, future)
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class Llama(nn.Module):
    def __init__(self, layers=4, heads=32, kv_heads=8, d_model=4096, d_mlp=14336, vocab=128256, context=4096,
                 theta=500000.0):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, d_model)
        self.layers = nn.ModuleList([LlamaBlock(d_model, heads, kv_heads, d_mlp) for _ in range(layers)])
        self.norm = RMSNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab, bias=False)
        d_head = d_model // heads
        inverse = 1.0 / (theta ** (torch.arange(0, d_head, 2, dtype=torch.float32) / d_head))
        angles = torch.outer(torch.arange(context, dtype=torch.float32), inverse)
        angles = torch.cat((angles, angles), dim=-1)
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)
        self.register_buffer("future", torch.ones(context, context, dtype=torch.bool).triu(1), persistent=False)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        T = input_ids.size(1)
        x = self.embed_tokens(input_ids)
        cos = self.cos[:T].to(x.dtype)
        sin = self.sin[:T].to(x.dtype)
        future = self.future[:T, :T]
        for layer in self.layers:
            x = layer(x, cos, sin, future)
        return self.lm_head(self.norm(x))


def tokenizer_json(vocab_size):
    vocab = {tok: i for i, tok in enumerate(SPECIALS)}
    for i in range(vocab_size - len(SPECIALS)):
        vocab[f"w{i}"] = len(vocab)
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": i, "content": tok, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for i, tok in enumerate(SPECIALS)],
        "normalizer": None, "pre_tokenizer": {"type": "WhitespaceSplit"}, "post_processor": None, "decoder": None,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "<unk>"},
    }


def build(name, path):
    torch.manual_seed(SEED)
    if name == "gpt2_small":
        model, dtype, vocab, context = GPT2(), torch.float32, 50257, 1024
    else:
        model, dtype, vocab, context = Llama(), torch.bfloat16, 128256, 4096
    with torch.no_grad():
        for parameter_name, parameter in model.named_parameters():
            if parameter.dim() == 1:
                nn.init.zeros_(parameter) if parameter_name.endswith("bias") else nn.init.ones_(parameter)
            else:
                nn.init.normal_(parameter, std=0.02)
    model = model.to(dtype).eval()
    scripted = torch.jit.script(model)
    meta = {"name": name, "bos_token": "<s>", "max_length": context}
    torch.jit.save(scripted, path + ".tmp", _extra_files={"tokenizer.json": json.dumps(tokenizer_json(vocab)),
                                                          "headscan.json": json.dumps(meta)})
    os.replace(path + ".tmp", path)
    parameters = sum(p.numel() for p in model.parameters())
    print(f"model: {path} ({parameters / 1e6:.0f}M parameters, {os.path.getsize(path) / 2**20:.0f} MiB)")
    return vocab


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir")
    parser.add_argument("--batches", type=int, default=100, help="batches per benchmark case")
    parser.add_argument("--only", nargs="+", default=None, help="models to build (default: all)")
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    vocabularies = {}
    for name in sorted({case[0] for case in CASES}):
        if args.only and name not in args.only:
            continue
        path = os.path.join(args.out_dir, f"{name}.pt")
        vocabularies[name] = build(name, path) if not os.path.exists(path) else (50257 if name == "gpt2_small" else 128256)
    rng = random.Random(SEED)
    for name, batch, length in CASES:
        if name not in vocabularies:
            continue
        words = vocabularies[name] - len(SPECIALS)
        corpus = os.path.join(args.out_dir, f"corpus_{name}_{batch}x{length}.txt")
        with open(corpus, "w", encoding="utf-8") as f:
            for _ in range(batch * args.batches):
                f.write(" ".join(f"w{rng.randrange(words)}" for _ in range(length - 1)) + "\n")
        print(f"corpus: {corpus} ({batch * args.batches} lines of {length - 1} words)")


if __name__ == "__main__":
    main()
