#!/usr/bin/env python3
"""One peer's whole run over a benchmark's model and corpus (bench/peers/run.sh and
bench/smollm2/run.sh time it).

    build/peers-venv/bin/python bench/peers/peer.py TOOL WORK [--threads 2] [--batch-size 8]
        [--seed 0] [--probe-lengths L1,L2,...[:REPEATS]] [--out FILE]

TOOL is one of
  transformers      the bare forward: AutoModelForCausalLM (transformers' default attention, SDPA)
                    over the corpus windows under torch.inference_mode(), nothing captured;
  transformer-lens  TransformerBridge.boot_transformers(WORK/model) (eager attention), then per
                    batch run_with_cache with names_filter keeping the attention patterns only,
                    and head_detector's detect_head for previous-token, duplicate-token and
                    induction heads on each corpus sequence (given that sequence's cache), and
                    its detection patterns and similarity score on headscan's probes;
  nnsight           TransformersModel(WORK/model, attn_implementation="eager"), each layer's
                    attention weights (the attention module's second output) saved in a trace
                    per batch, TransformerLens' three scores computed from them (scores.py).
WORK holds model/ (a transformers directory: GPT-2 or Llama-shaped), corpus.txt and windows.json
({"bos": id, "windows": [ids of each line]}, the ids `headscan tokenize` gives). Every tool
tokenizes WORK/corpus.txt itself (BOS + the line: each line is one window) and checks the ids
against windows.json, the ids headscan runs. Windows may differ in length: a batch is then
right-padded, and only each window's own rows and keys are scored (a causal model's real rows do
not see right padding, so no attention mask is needed). The peers capturing attention also run
headscan's 10 induction probes (probes.py, --seed as headscan's) and compute headscan's
definitions (scores.py) from what they captured, for bench/peers/agreement.py. --out gets the
phases' seconds and the scores as JSON.
"""

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402

import probes as probe_module  # noqa: E402
import scores as score_module  # noqa: E402


def batches(items, size):
    return [items[start:start + size] for start in range(0, len(items), size)]


def padded(sequences, pad):
    length = max(len(s) for s in sequences)
    return torch.tensor([s + [pad] * (length - len(s)) for s in sequences]), [len(s) for s in sequences]


def load_inputs(work):
    with open(os.path.join(work, "corpus.txt"), encoding="utf-8") as corpus:
        lines = corpus.read().splitlines()
    with open(os.path.join(work, "windows.json"), encoding="utf-8") as windows:
        expected = json.load(windows)
    return lines, expected


def check_ids(ids, expected, where):
    if ids != expected:
        sys.exit(f"peer.py: {where}: the tool's tokens differ from windows.json (headscan's windows)")


def make_probes(tokenizer, bos, length, args):
    vocab_size = len(tokenizer)
    pieces = tokenizer.convert_ids_to_tokens(list(range(vocab_size)))
    # headscan's special ids: the tokenizer's and every added token marked special (tokenizer.json's
    # added_tokens; all_special_ids may name only BOS, EOS, UNK and padding)
    special = set(tokenizer.all_special_ids)
    special |= {i for i, token in getattr(tokenizer, "added_tokens_decoder", {}).items() if token.special}
    vocabulary = probe_module.probe_vocabulary(pieces, special)
    lengths, repeats = probe_module.repeat_lengths(length)
    if args.probe_lengths:
        text, _, repeats_text = args.probe_lengths.partition(":")
        lengths = [int(n) for n in text.split(",") if n]
        repeats = int(repeats_text or repeats)
    return probe_module.make_probes(vocabulary, bos, lengths, repeats, args.seed)


def run_transformers(args, lines, expected, phases):
    from transformers import AutoModelForCausalLM, AutoTokenizer
    begin = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(os.path.join(args.work, "model"))
    model = AutoModelForCausalLM.from_pretrained(os.path.join(args.work, "model")).eval()
    phases["load"] = time.perf_counter() - begin
    begin = time.perf_counter()
    ids = [[expected["bos"]] + tokenizer(line)["input_ids"] for line in lines]
    check_ids(ids, expected["windows"], "transformers' tokenizer")
    with torch.inference_mode():
        for batch in batches(ids, args.batch_size):
            model(padded(batch, expected["bos"])[0])
    phases["corpus"] = time.perf_counter() - begin
    return None


def run_transformer_lens(args, lines, expected, phases):
    from transformer_lens.ActivationCache import ActivationCache
    from transformer_lens import head_detector
    from transformer_lens.model_bridge import TransformerBridge
    begin = time.perf_counter()
    model = TransformerBridge.boot_transformers(os.path.join(args.work, "model"), device="cpu")
    phases["load"] = time.perf_counter() - begin
    layers, heads, bos = model.cfg.n_layers, model.cfg.n_heads, expected["bos"]
    scores = score_module.Scores(layers, heads, bos, detector=False)
    detector = {source: {name: torch.zeros(layers, heads, dtype=torch.float64) for name in score_module.DETECTOR}
                for source in ("corpus", "probes")}
    counted = {"corpus": 0, "probes": 0}
    keep = lambda name: name.endswith("attn.hook_pattern")  # noqa: E731
    pattern = lambda layer: f"blocks.{layer}.attn.hook_pattern"  # noqa: E731

    begin = time.perf_counter()
    ids = []
    with torch.inference_mode():
        for batch_lines in batches(lines, args.batch_size):
            rows = [model.to_tokens(line)[0].tolist() for line in batch_lines]  # BOS prepended
            ids += rows
            tokens, lengths = padded(rows, bos)
            _, cache = model.run_with_cache(tokens, names_filter=keep)
            for layer in range(layers):
                scores.add_corpus(layer, cache[pattern(layer)], tokens, lengths)
            for b, (line, length) in enumerate(zip(batch_lines, lengths)):
                one = ActivationCache({name: value[b, :, :length, :length] for name, value in cache.cache_dict.items()},
                                      model, has_batch_dim=False)
                for name in score_module.DETECTOR:
                    detector["corpus"][name] += head_detector.detect_head(model, line, name, cache=one).double()
                counted["corpus"] += 1
    check_ids(ids, expected["windows"], "TransformerLens' to_tokens")
    phases["corpus"] = time.perf_counter() - begin

    begin = time.perf_counter()
    probe_ids = make_probes(model.tokenizer, bos, max(map(len, expected["windows"])), args)
    with torch.inference_mode():
        for batch in batches(probe_ids, args.batch_size):
            tokens, lengths = padded(batch, bos)
            _, cache = model.run_with_cache(tokens, names_filter=keep)
            for layer in range(layers):
                scores.add_probes(layer, cache[pattern(layer)], tokens, lengths)
                for b, length in enumerate(lengths):
                    attention = cache[pattern(layer)][b, :, :length, :length]
                    for name in score_module.DETECTOR:
                        expected_pattern = getattr(head_detector, f"get_{name}_detection_pattern")(tokens[b:b + 1, :length])
                        for head in range(heads):
                            detector["probes"][name][layer, head] += head_detector.compute_head_attention_similarity_score(
                                attention[head], expected_pattern, exclude_bos=False, exclude_current_token=False,
                                error_measure="mul")
            counted["probes"] += len(batch)
    phases["probes"] = time.perf_counter() - begin
    result = scores.result()
    result["detector"] = {source: {name: (sums / counted[source]).tolist() for name, sums in by_name.items()}
                          for source, by_name in detector.items()}
    result["probe_ids"] = probe_ids
    return result


def run_nnsight(args, lines, expected, phases):
    from nnsight import TransformersModel
    begin = time.perf_counter()
    model = TransformersModel(os.path.join(args.work, "model"), task="text-generation",
                              attn_implementation="eager", dispatch=True)
    phases["load"] = time.perf_counter() - begin
    config = model.config
    layers, heads, bos = config.num_hidden_layers, config.num_attention_heads, expected["bos"]
    scores = score_module.Scores(layers, heads, bos)
    # Each layer's attention module, whose second output is the attention weights (eager).
    if config.model_type == "gpt2":
        attention_module = lambda layer: model.transformer.h[layer].attn  # noqa: E731
    else:  # Llama and its kin
        attention_module = lambda layer: model.model.layers[layer].self_attn  # noqa: E731

    def capture(tokens):
        saved = []
        with torch.inference_mode(), model.trace(tokens):
            for layer in range(layers):
                saved.append(attention_module(layer).output[1].save())
        return saved

    begin = time.perf_counter()
    ids = [[bos] + model.tokenizer(line)["input_ids"] for line in lines]
    check_ids(ids, expected["windows"], "nnsight's tokenizer")
    for batch in batches(ids, args.batch_size):
        tokens, lengths = padded(batch, bos)
        for layer, attention in enumerate(capture(tokens)):
            scores.add_corpus(layer, attention, tokens, lengths)
    phases["corpus"] = time.perf_counter() - begin

    begin = time.perf_counter()
    probe_ids = make_probes(model.tokenizer, bos, max(map(len, expected["windows"])), args)
    for batch in batches(probe_ids, args.batch_size):
        tokens, lengths = padded(batch, bos)
        for layer, attention in enumerate(capture(tokens)):
            scores.add_probes(layer, attention, tokens, lengths)
    phases["probes"] = time.perf_counter() - begin
    result = scores.result()
    result["probe_ids"] = probe_ids
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tool", choices=["transformers", "transformer-lens", "nnsight"])
    parser.add_argument("work")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0, help="headscan's --seed, for the probes")
    parser.add_argument("--probe-lengths", metavar="L1,L2,...[:REPEATS]",
                        help="|R| of each probe (heads.json's probes.repeat_lengths) and the repeats; "
                             "default: headscan's 10 probes for the windows' length")
    parser.add_argument("--out", help="JSON file for the phases and scores")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    lines, expected = load_inputs(args.work)
    phases = {}
    run = {"transformers": run_transformers, "transformer-lens": run_transformer_lens, "nnsight": run_nnsight}
    result = run[args.tool](args, lines, expected, phases)
    print(f"{args.tool}: " + ", ".join(f"{name} {seconds:.2f} s" for name, seconds in phases.items()))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as out:
            json.dump({"tool": args.tool, "phases": phases, "scores": result}, out)


if __name__ == "__main__":
    main()
