#!/usr/bin/env python3
"""The baseline of bench/smollm2/run.sh: transformers' own SDPA forward of a model directory over a
corpus's documents, as a user of transformers, TransformerLens or nnsight pays at least.

    python bench/smollm2/bare_sdpa.py MODEL_DIR CORPUS [--threads N] [--batch-size N] [--max-length N]

One document per line, tokenized by the directory's tokenizer, BOS + the line as headscan frames it
(BOS prepended where the tokenizer does not add it; SmolLM2's does not), cut at --max-length tokens, in batches of --batch-size in corpus order, right-padded with the attention
mask, under torch.inference_mode(), logits included. Prints the tokens, the forward's seconds and
the peak resident memory.
"""

import argparse
import resource
import time

import torch
import transformers


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model")
    parser.add_argument("corpus")
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--max-length", type=int, default=8192)
    args = parser.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    start = time.perf_counter()
    tokenizer = transformers.AutoTokenizer.from_pretrained(args.model)
    model = transformers.AutoModelForCausalLM.from_pretrained(args.model, attn_implementation="sdpa",
                                                              torch_dtype=torch.float32).eval()
    with open(args.corpus, encoding="utf-8") as f:
        documents = [line.strip() for line in f if line.strip()]
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    bos = tokenizer.bos_token_id

    def encode(text):
        ids = tokenizer(text).input_ids
        if bos is not None and ids[:1] != [bos]:
            ids = [bos] + ids
        return ids[:args.max_length]
    loaded = time.perf_counter()
    tokens = 0
    with torch.inference_mode():
        for first in range(0, len(documents), args.batch_size):
            rows = [encode(text) for text in documents[first:first + args.batch_size]]
            width = max(map(len, rows))
            ids = torch.full((len(rows), width), pad, dtype=torch.long)
            mask = torch.zeros_like(ids)
            for i, row in enumerate(rows):
                ids[i, :len(row)] = torch.tensor(row)
                mask[i, :len(row)] = 1
            model(input_ids=ids, attention_mask=mask, use_cache=False)
            tokens += sum(map(len, rows))
    end = time.perf_counter()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"bare_sdpa: {len(documents)} documents, {tokens} tokens; load {loaded - start:.1f} s, forward "
          f"{end - loaded:.1f} s, in all {end - start:.1f} s; peak RSS {peak:.0f} MiB")


if __name__ == "__main__":
    main()
