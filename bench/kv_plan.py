#!/usr/bin/env python3
"""headscan's KV-cache plan measured: what the model keeps of its abilities at long context when the
plan's streaming key/value heads keep only their sink and recent window, against other choices of
the same number of streaming heads.

    python bench/kv_plan.py MODEL_DIR REPORT [--lengths 1024,2048] [--heldout FILE] [--out FILE]
                            [--haystacks 2] [--seeds 5] [--device cpu] [--dtype float32]

MODEL_DIR: a transformers model directory (what `headscan export` reads); REPORT: headscan's report
directory of that model (heads.json and kv_plan/). Runs in a venv with kvpress 0.5.5 (transformers
< 5.3) and the headscan wheel: tests/kvpress/run.sh builds one (build/kvpress-tests/venv).

Every method runs as kvpress applies a press: the context is prefilled under the press (kvpress's
forward hooks; DuoAttentionPress then masks each streaming key/value head's keys outside its first
`sink_size` and last `recent_size` tokens out of every later attention), and what follows the
context is decoded over that cache one token at a time, as generation does. The methods, all at
the plan's sink and recent window:

  full        no press: the whole cache
  plan        headscan.kvpress.press(REPORT): the plan's streaming key/value heads
  on-the-fly  kvpress's DuoAttentionPress(on_the_fly_scoring=True, head_compression_ratio=r), r the
              plan's share of streaming key/value heads, so the same number of heads stream: its
              own scores (the mean query's attention over mean keys, kvpress's "area under the
              cumulated attention curve") choose them. Its texts are the held-back text's documents
              (kvpress downloads BookSum's; nothing is downloaded here), cut to the model's
              positions. kvpress gives on-the-fly scoring sink 128 and recent 256; here it keeps
              the plan's, so that only the choice of heads differs.
  random      the same number of streaming key/value heads drawn uniformly, one draw per seed
              (--seeds, seeds 0 … N−1); the mean over seeds, each seed in the JSON

Per context length L (tokens of context, BOS included):
  needle accuracy  haystacks of held-back text (--haystack random: random tokens of the text's
                   vocabulary), each L − 1 − N tokens, holding at depths 10, 30, 50, 70 and 90 % a
                   needle of N (--needle-tokens, 16) distinct random tokens that occur nowhere in the
                   haystack (special tokens excluded); after the context the first C tokens of the
                   needle (--cue, 4) are given and the model continues greedily for N − C tokens;
                   accuracy = the share of them equal to the needle's, over all probes
                   (--haystacks × 5 depths)
  loss             mean next-token loss (nats) of the --loss-tokens (64) tokens of held-back text
                   that follow L tokens of it, over --loss-windows (4) windows
  kv kept          the share of the KV cache kept at L: 1 − r · (1 − (sink + recent) / L)
Prints a table per length and writes the results as JSON (--out), and, as the report's section, to
REPORT/kv_plan/measured.json and REPORT/kv_plan/measured.html.
"""
import argparse
import contextlib
import json
import random
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kv_plan_page import write_page  # noqa: E402

DEPTHS = (0.1, 0.3, 0.5, 0.7, 0.9)


class InputError(Exception):
    """What the inputs cannot give (exit 2)."""
METHODS = ("full", "plan", "on-the-fly", "random")


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("model_dir", type=Path, help="transformers model directory")
    parser.add_argument("report", type=Path, help="headscan's report directory of that model")
    parser.add_argument("--lengths", default="1024,2048", help="context lengths in tokens, comma-separated")
    parser.add_argument("--heldout", type=Path, help="held-back text, one document per line (default: "
                        "MODEL_DIR/../heldout.txt, the tests' model's)")
    parser.add_argument("--haystack", choices=("text", "random"), default="text")
    parser.add_argument("--haystacks", type=int, default=2, help="haystacks per length (each at 5 depths)")
    parser.add_argument("--needle-tokens", type=int, default=16)
    parser.add_argument("--cue", type=int, default=4, help="needle tokens given after the context")
    parser.add_argument("--loss-tokens", type=int, default=64)
    parser.add_argument("--loss-windows", type=int, default=4)
    parser.add_argument("--seeds", type=int, default=5, help="random choices of streaming heads")
    parser.add_argument("--seed", type=int, default=0, help="seed of the haystacks and needles")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", choices=("float32", "bfloat16", "float16"), default="float32")
    parser.add_argument("--threads", type=int, help="CPU threads for torch (default: torch's); a small model on a "
                        "busy machine runs far faster on 1")
    parser.add_argument("--fly-tokens", type=int, default=4096, help="tokens of each held-back document that "
                        "kvpress's on-the-fly scoring reads (default 4096, or the model's positions if fewer)")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args(argv)
    try:
        args.lengths = [int(value) for value in args.lengths.split(",")]
    except ValueError:
        parser.error(f"--lengths: whole numbers separated by commas, found {args.lengths!r}")
    for name in ("haystacks", "needle_tokens", "loss_tokens", "loss_windows", "seeds", "fly_tokens"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if not 1 <= args.cue < args.needle_tokens:
        parser.error(f"--cue must be from 1 to --needle-tokens − 1 ({args.needle_tokens - 1}), found {args.cue}")
    shortest = 1 + args.needle_tokens + len(DEPTHS)  # BOS, the needle and a haystack token per depth
    if min(args.lengths) < shortest:
        parser.error(f"--lengths: {min(args.lengths)} leaves no room for a haystack around a needle of "
                     f"{args.needle_tokens} tokens; give lengths of at least {shortest}")
    if args.heldout is None:
        args.heldout = args.model_dir.resolve().parent / "heldout.txt"
    for path, what in ((args.model_dir / "config.json", "MODEL_DIR/config.json"), (args.heldout, "--heldout")):
        if not path.is_file():
            parser.error(f"{what}: {path} is not a file")
    if not args.report.exists():
        parser.error(f"REPORT: {args.report} does not exist; give headscan's report directory of the model")
    return args


def load_model(model_dir, device, dtype):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    # DuoAttentionPress refuses eager attention (it masks keys inside transformers' attention functions).
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=getattr(torch, dtype),
                                                 attn_implementation="sdpa").to(device).eval()
    return model, AutoTokenizer.from_pretrained(str(model_dir))


def heldout_documents(path):
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


class Probes:
    """The held-back text's tokens and the probes cut from them."""

    def __init__(self, tokenizer, documents, args):
        self.bos = [tokenizer.bos_token_id] if tokenizer.bos_token_id is not None else []
        self.tokens = [t for doc in documents
                       for t in tokenizer(doc, add_special_tokens=False, verbose=False)["input_ids"]]
        self.special = set(tokenizer.all_special_ids)
        self.vocabulary = [t for t in range(len(tokenizer)) if t not in self.special]
        self.args = args

    def window(self, start, size):
        """size tokens of the held-back text from start, wrapping around."""
        tokens = self.tokens
        return [tokens[(start + i) % len(tokens)] for i in range(size)]

    def needles(self, length):
        """[(context ids, needle ids)] for a context of `length` tokens: haystack by haystack, depth by depth."""
        args, rng = self.args, random.Random(f"{self.args.seed}/{length}")
        size = length - len(self.bos) - args.needle_tokens
        text_vocabulary = sorted(set(self.tokens))
        probes = []
        for h in range(args.haystacks):
            if args.haystack == "text":
                haystack = self.window(h * size, size)
            else:
                haystack = [rng.choice(text_vocabulary) for _ in range(size)]
            candidates = sorted(set(self.vocabulary) - set(haystack))
            if len(candidates) < args.needle_tokens:
                raise InputError(f"only {len(candidates)} tokens of the vocabulary are absent from a haystack of "
                                 f"{size} tokens, fewer than --needle-tokens {args.needle_tokens}")
            for depth in DEPTHS:
                needle = rng.sample(candidates, args.needle_tokens)
                at = round(depth * size)
                probes.append((self.bos + haystack[:at] + needle + haystack[at:], needle))
        return probes

    def loss_windows(self, length):
        """[(context ids, continuation ids)]: length tokens (BOS first) and the loss tokens after them."""
        args, windows = self.args, []
        span = length - len(self.bos) + args.loss_tokens + 1
        stride = max(1, len(self.tokens) // args.loss_windows)
        for w in range(args.loss_windows):
            text = self.window(w * stride, span)
            cut = length - len(self.bos)
            windows.append((self.bos + text[:cut], text[cut:]))
        return windows


def prefill(model, press, context):
    """The context through the model under the press, as kvpress's pipeline prefills: the cache."""
    from transformers import DynamicCache

    cache = DynamicCache()
    ids = torch.tensor([context], device=model.device)
    with press(model) if press is not None else contextlib.nullcontext():
        model.model(input_ids=ids, past_key_values=cache)
    return cache


def decode(model, cache, tokens, at):
    """tokens fed after the cache one at a time, from position `at`, as generation feeds them:
    their logits [len(tokens), vocabulary]. (kvpress masks a streaming head's keys with one key
    that every query of its key/value group must score below zero; many tokens in one call are
    many queries, which small heads cannot always put on one side: kvpress then raises "Could not
    find fake keys".)"""
    logits = []
    for offset, token in enumerate(tokens):
        ids = torch.tensor([[token]], device=model.device)
        position = torch.tensor([[at + offset]], device=model.device)
        logits.append(model(input_ids=ids, past_key_values=cache, position_ids=position).logits[0, -1].float())
    return torch.stack(logits)


@torch.no_grad()
def needle_accuracy(model, press, probes, cue):
    """The share of needle tokens after the cue that greedy continuation reproduces."""
    correct = total = 0
    for context, needle in probes:
        cache = prefill(model, press, context)
        generated = [int(decode(model, cache, needle[:cue], len(context))[-1].argmax())]
        while len(generated) < len(needle) - cue:
            at = len(context) + cue + len(generated) - 1
            generated.append(int(decode(model, cache, generated[-1:], at)[-1].argmax()))
        correct += sum(g == t for g, t in zip(generated, needle[cue:]))
        total += len(generated)
    return correct / total


@torch.no_grad()
def mean_loss(model, press, windows):
    losses = []
    for context, continuation in windows:
        cache = prefill(model, press, context)
        logits = decode(model, cache, continuation[:-1], len(context))
        target = torch.tensor(continuation[1:], device=logits.device)
        losses.append(torch.nn.functional.cross_entropy(logits, target).item())
    return statistics.fmean(losses)


def on_the_fly_mask(model, tokenizer, ratio, documents, tokens):
    """kvpress's DuoAttentionPress(on_the_fly_scoring=True)'s streaming mask at this ratio, its texts
    the held-back documents instead of BookSum (which kvpress would download)."""
    import pandas
    from kvpress import DuoAttentionPress
    from kvpress.presses import duo_attention_press

    limit = min(getattr(model.config, "max_position_embeddings", None) or tokens, tokens)
    texts = [tokenizer.decode(tokenizer(doc, add_special_tokens=False, verbose=False)["input_ids"][:limit - 1])
             for doc in documents]
    texts = (texts * (50 // len(texts) + 1))[:max(50, len(texts))]  # kvpress samples 50 of them

    class Texts:
        def to_pandas(self):
            return pandas.DataFrame({"chapter": texts})

    original = duo_attention_press.load_dataset
    duo_attention_press.load_dataset = lambda *args, **kwargs: Texts()
    try:
        press = DuoAttentionPress(head_compression_ratio=ratio, on_the_fly_scoring=True)
        press.post_init_from_model(model)
    finally:
        duo_attention_press.load_dataset = original
    return press.streaming_mask.cpu()


def random_mask(shape, streaming, seed):
    generator = torch.Generator().manual_seed(seed)
    mask = torch.zeros(shape[0] * shape[1], dtype=torch.bool)
    mask[torch.randperm(mask.numel(), generator=generator)[:streaming]] = True
    return mask.view(shape)


def measure(args, plan):
    from headscan import kvpress as headscan_kvpress
    from transformers.utils import logging

    logging.disable_progress_bar()
    if args.threads:
        torch.set_num_threads(args.threads)

    model, tokenizer = load_model(args.model_dir, args.device, args.dtype)
    documents = heldout_documents(args.heldout)
    if not documents:
        raise InputError(f"--heldout: {args.heldout} holds no text; give held-back text, one document per line")
    streaming = int(plan.streaming_mask.sum())
    cells = plan.streaming_mask.numel()
    ratio = streaming / cells
    sink, recent = plan.sink_size, plan.recent_size

    def of_mask(mask):
        return headscan_kvpress.press_from_mask(mask, sink, recent, layers=plan.layers)

    try:
        presses = {"full": None, "plan": headscan_kvpress.press(args.report)}
        presses["plan"].post_init_from_model(model)  # the plan must be this model's
    except ValueError as error:
        raise InputError(error) from error
    fly = on_the_fly_mask(model, tokenizer, ratio, documents, args.fly_tokens)
    presses["on-the-fly"] = of_mask(fly[list(plan.layers)])
    randoms = [random_mask(plan.streaming_mask.shape, streaming, seed) for seed in range(args.seeds)]
    probes = Probes(tokenizer, documents, args)
    started = time.perf_counter()
    results = []
    for length in args.lengths:
        needles, windows = probes.needles(length), probes.loss_windows(length)
        row = {"length": length, "kv_kept": round(1 - ratio * max(0.0, 1 - (sink + recent) / length), 6),
               "probes": len(needles), "loss_windows": len(windows), "methods": {}}
        for name, press in presses.items():
            row["methods"][name] = {"needle_accuracy": needle_accuracy(model, press, needles, args.cue),
                                    "loss": mean_loss(model, press, windows)}
        seeds = [{"seed": seed, "needle_accuracy": needle_accuracy(model, of_mask(mask), needles, args.cue),
                  "loss": mean_loss(model, of_mask(mask), windows)} for seed, mask in enumerate(randoms)]
        row["methods"]["random"] = {"needle_accuracy": statistics.fmean(s["needle_accuracy"] for s in seeds),
                                    "loss": statistics.fmean(s["loss"] for s in seeds), "seeds": seeds}
        results.append(row)
    return {
        "model": str(args.model_dir.resolve()), "report": str(args.report.resolve()),
        "heldout": str(args.heldout.resolve()),
        "sink_size": sink, "recent_size": recent, "kv_heads": cells, "streaming_kv_heads": streaming,
        "head_compression_ratio": ratio,
        "masks": {"plan": plan.streaming_mask.int().tolist(), "on-the-fly": fly[list(plan.layers)].int().tolist(),
                  "random": [mask.int().tolist() for mask in randoms]},
        "settings": {"haystack": args.haystack, "haystacks": args.haystacks, "depths": list(DEPTHS),
                     "needle_tokens": args.needle_tokens, "cue": args.cue, "loss_tokens": args.loss_tokens,
                     "loss_windows": args.loss_windows, "seeds": args.seeds, "seed": args.seed,
                     "device": args.device, "dtype": args.dtype, "threads": torch.get_num_threads(),
                     "fly_tokens": args.fly_tokens},
        "lengths": results, "seconds": round(time.perf_counter() - started, 1),
    }


def table(result):
    lines = [f"{result['streaming_kv_heads']} of {result['kv_heads']} key/value heads streaming "
             f"(sink {result['sink_size']}, recent {result['recent_size']}); random: mean of "
             f"{result['settings']['seeds']} seeds",
             f"{'length':>7} {'kv kept':>8} {'method':<11} {'needle acc':>10} {'loss':>8}"]
    for row in result["lengths"]:
        for name in METHODS:
            values = row["methods"][name]
            lines.append(f"{row['length']:>7} {row['kv_kept']:>8.3f} {name:<11} "
                         f"{values['needle_accuracy']:>10.3f} {values['loss']:>8.4f}")
    return "\n".join(lines)


def fail(error):
    print(f"kv_plan.py: error: {error}", file=sys.stderr)
    sys.exit(2)


def main(argv=None):
    args = parse_args(argv)
    from headscan import kvpress as headscan_kvpress

    try:
        plan = headscan_kvpress.plan(args.report)
    except ValueError as error:  # a report without a plan
        fail(error)
    try:
        result = measure(args, plan)
    except InputError as error:
        fail(error)
    print(table(result))
    text = json.dumps(result, indent=1) + "\n"
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    section = (args.report if args.report.is_dir() else args.report.parent) / "kv_plan"
    if section.is_dir():
        (section / "measured.json").write_text(text, encoding="utf-8")
        write_page(result, section / "measured.html")
        print(f"wrote {section / 'measured.json'} and {section / 'measured.html'}")


if __name__ == "__main__":
    main()
