#!/usr/bin/env python3
"""Train headscan's bundled demo model: a two-layer attention-only causal transformer that learns
to copy repeated spans, and so develops a previous-token head in layer 0 and an induction head in
layer 1 (Olsson et al. 2022, "In-context Learning and Induction Heads"). One head per layer, so
that each head of the circuit is the only one doing its job: removing one (headscan --ablation)
shows its whole effect, where two redundant induction heads would each stand in for the other.

Run with the venv's Python (scripts/setup.sh):   .venv/bin/python data/make_demo.py

Writes, next to this script:
  demo.pt           TorchScript (scripted) model; tokenizer.json (WordLevel) and headscan.json embedded
  demo_checkpoints/ the model at the training steps in CHECKPOINT_STEPS, saved the same way as
                    demo.pt with the step in headscan.json ("step"): step-00000.pt, ... They straddle
                    the phase change in which the induction head forms, for `headscan compare`.
  demo_corpus.txt   300 lines of the same kind of text as the training data, for the quick start

Training: AdamW with a one-cycle learning rate (peak 2e-3) over 8000 steps of 32 lines.
Training data: each line is a short random prefix followed by one random span of 6-24 words
repeated until the line is full, over a vocabulary of 60 words. Copying the span from context is
the only way to predict beyond its first occurrence, which is what induction heads do. In 60% of
the lines the span has no repeated word, like headscan's probes; in the rest its words are drawn
independently, so a word can recur within the span. (With only distinct spans the layer-0 head
spreads more of its attention over the context and its previous-token score stays near 0.4; with
only independent draws the induction head's probe score stays near 0.77.)
Seeded, one thread: a run takes a few minutes on one CPU core and gives the same files every time.
Python is needed only here, to train (autograd); headscan itself never runs Python.

To look for the phase change with denser checkpoints:
  .venv/bin/python data/make_demo.py --every 50 --out /tmp/ckpts
trains the same model but writes only step-NNNNN.pt every 50 steps into /tmp/ckpts.
"""

import argparse
import copy
import json
import math
import os
import random
import sys
import time

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
WORDS = ["w%d" % i for i in range(60)]
SPECIAL = ["<s>", "<unk>"]            # <s> is BOS
VOCAB = len(SPECIAL) + len(WORDS)
CONTEXT = 96
D_MODEL = 64
HEADS = 1
LAYERS = 2
STEPS = 8000
BATCH = 32
DISTINCT_SPANS = 0.6                  # fraction of lines whose span has no repeated word
# Training steps saved into demo_checkpoints/: the induction head forms in a phase change between
# steps 1150 and 1300 (chosen from a run with --every 50); 8000 is the final model, as in demo.pt.
CHECKPOINT_STEPS = (0, 500, 1150, 1200, 1250, 1300, 2000, 8000)


def sample_line(rng: random.Random) -> list:
    """Word indices of one line: a random prefix, then a random span repeated to the line's end."""
    length = rng.randint(40, CONTEXT - 1)
    distinct = rng.random() < DISTINCT_SPANS
    size = rng.randint(6, 24)
    span = rng.sample(range(len(WORDS)), size) if distinct else [rng.randrange(len(WORDS)) for _ in range(size)]
    words = [rng.randrange(len(WORDS)) for _ in range(rng.randint(0, 10))]
    while len(words) < length:
        words += span
    return words[:length]


class Attention(nn.Module):
    """Causal multi-head self-attention, with explicit softmax(QK^T / sqrt(d)) as headscan needs."""

    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(D_MODEL, 3 * D_MODEL)
        self.out = nn.Linear(D_MODEL, D_MODEL)
        self.d_model = D_MODEL
        self.heads = HEADS
        self.register_buffer("mask", torch.tril(torch.ones(CONTEXT, CONTEXT)).view(1, 1, CONTEXT, CONTEXT))

    def forward(self, x):
        batch, length, _ = x.shape
        head_dim = self.d_model // self.heads
        q, k, v = self.qkv(x).split(self.d_model, dim=2)
        q = q.view(batch, length, self.heads, head_dim).transpose(1, 2)
        k = k.view(batch, length, self.heads, head_dim).transpose(1, 2)
        v = v.view(batch, length, self.heads, head_dim).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(head_dim)
        scores = scores.masked_fill(self.mask[:, :, :length, :length] == 0, float("-inf"))
        attention = torch.softmax(scores, dim=-1)  # [B, H, T, T]
        return self.out((attention @ v).transpose(1, 2).reshape(batch, length, self.d_model))


class DemoModel(nn.Module):
    """Token and position embeddings, attention-only residual blocks, final LayerNorm, logits."""

    def __init__(self):
        super().__init__()
        self.tokens = nn.Embedding(VOCAB, D_MODEL)
        self.positions = nn.Embedding(CONTEXT, D_MODEL)
        self.layers = nn.ModuleList([Attention() for _ in range(LAYERS)])
        self.norm = nn.LayerNorm(D_MODEL)
        self.unembed = nn.Linear(D_MODEL, VOCAB)

    def forward(self, input_ids):
        positions = torch.arange(input_ids.size(1), device=input_ids.device)
        x = self.tokens(input_ids) + self.positions(positions)
        for layer in self.layers:
            x = x + layer(x)
        return self.unembed(self.norm(x))


def train(model: DemoModel, save_steps, save) -> None:
    """Trains for STEPS steps; calls save(model, step) after `step` updates for each step in save_steps."""
    rng = random.Random(1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=2e-3, total_steps=STEPS)
    for step in range(STEPS):
        if step in save_steps:
            save(model, step)
        lines = [[0] + [w + len(SPECIAL) for w in sample_line(rng)] for _ in range(BATCH)]
        longest = max(len(line) for line in lines)
        ids = torch.tensor([line + [0] * (longest - len(line)) for line in lines])
        lengths = torch.tensor([len(line) for line in lines])
        targets = ids[:, 1:].clone()
        targets[torch.arange(longest - 1)[None, :] >= (lengths[:, None] - 1)] = -100  # padding
        logits = model(ids[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1), ignore_index=-100)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
        if step % 250 == 0 or step == STEPS - 1:
            print(f"step {step:5d}  loss {loss.item():.3f}", flush=True)
    if STEPS in save_steps:
        save(model, STEPS)


def tokenizer_json() -> str:
    added = [{"id": i, "content": token, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, token in enumerate(SPECIAL)]
    vocab = {token: i for i, token in enumerate(SPECIAL)}
    vocab.update({word: i + len(SPECIAL) for i, word in enumerate(WORDS)})
    return json.dumps({"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
                       "normalizer": None, "pre_tokenizer": {"type": "WhitespaceSplit"}, "post_processor": None,
                       "decoder": None, "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "<unk>"}})


def save_model(model: DemoModel, path: str, step=None) -> None:
    """Scripted TorchScript with the tokenizer and headscan.json embedded; `step` goes into headscan.json."""
    frozen = copy.deepcopy(model).eval()
    metadata = {"name": "headscan-demo-2l", "bos_token": "<s>", "max_length": CONTEXT, "causal": True}
    if step is not None:
        metadata["step"] = step
    torch.jit.save(torch.jit.script(frozen), path,
                   _extra_files={"tokenizer.json": tokenizer_json(), "headscan.json": json.dumps(metadata)})


def main() -> None:
    if os.environ.get("PYTHONHASHSEED") != "0":
        # TorchScript writes a module's constants in set order, which follows Python's string hash:
        # a fixed hash seed makes the saved files, not only the weights, the same on every run.
        os.execve(sys.executable, [sys.executable] + sys.argv, dict(os.environ, PYTHONHASHSEED="0"))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--every", type=int, help="exploration: save a checkpoint every N steps, into --out only")
    parser.add_argument("--out", help="exploration: directory for the --every checkpoints")
    args = parser.parse_args()
    if (args.every is None) != (args.out is None):
        parser.error("--every and --out go together")
    torch.manual_seed(0)
    torch.set_num_threads(1)
    if args.every:
        out = args.out
        save_steps = set(range(0, STEPS + 1, args.every))
    else:
        out = os.path.join(HERE, "demo_checkpoints")
        save_steps = set(CHECKPOINT_STEPS)
    os.makedirs(out, exist_ok=True)
    for name in os.listdir(out):  # stale checkpoints of an earlier recipe
        if name.startswith("step-") and name.endswith(".pt"):
            os.remove(os.path.join(out, name))
    started = time.time()
    model = DemoModel()
    train(model, save_steps, lambda m, step: save_model(m, os.path.join(out, f"step-{step:05d}.pt"), step))
    print(f"trained in {time.time() - started:.0f} s", flush=True)
    if args.every:
        return
    save_model(model, os.path.join(HERE, "demo.pt"))
    rng = random.Random(7)
    with open(os.path.join(HERE, "demo_corpus.txt"), "w") as corpus:
        for _ in range(300):
            corpus.write(" ".join(WORDS[w] for w in sample_line(rng)) + "\n")


if __name__ == "__main__":
    main()
