#!/usr/bin/env python3
"""A bare forward pass in Python: the baseline a TransformerLens or plain PyTorch user pays.

    .venv/bin/python bench/bare_forward.py MODEL.pt CORPUS [--threads N] [--batch-size N] [--max-length N]

Loads the TorchScript archive with torch.jit.load, tokenizes the corpus with the archive's
WordLevel tokenizer.json (whitespace split, as bench/make_gpt2_small.py writes it), cuts each line
into windows of max_length tokens with BOS prepended (headscan.json), and runs consecutive windows
of equal length in batches of --batch-size (shorter ones right-padded with BOS) under
torch.no_grad(). One extra forward over two tokens first, as headscan_bench_forward does. Prints
the batches, sequences and tokens it ran.
"""

import argparse
import json
import time
import zipfile

import torch


def extra_file(path: str, name: str) -> str:
    with zipfile.ZipFile(path) as archive:
        for entry in archive.namelist():
            if entry.endswith("/extra/" + name):
                return archive.read(entry).decode("utf-8")
    return ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model")
    parser.add_argument("corpus")
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--max-length", type=int, default=0, help="tokens per window, BOS included")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    args = parser.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)

    tokenizer = json.loads(extra_file(args.model, "tokenizer.json"))
    meta = json.loads(extra_file(args.model, "headscan.json") or "{}")
    vocab = tokenizer["model"]["vocab"]
    unk = vocab[tokenizer["model"]["unk_token"]]
    bos = vocab[meta["bos_token"]]
    room = (args.max_length or meta.get("max_length", 512)) - 1
    device = torch.device(args.device)
    module = torch.jit.load(args.model, map_location=device).eval()

    windows = []
    with open(args.corpus, encoding="utf-8") as corpus:
        for line in corpus:
            ids = [vocab.get(word, unk) for word in line.split()]
            windows += [[bos] + ids[start:start + room] for start in range(0, len(ids), room)]

    batches = sequences = tokens = 0
    forward_seconds = 0.0
    cuda = device.type == "cuda"
    if cuda:
        torch.cuda.reset_peak_memory_stats(device)
    with torch.no_grad():
        module(torch.full((1, 2), bos, dtype=torch.long, device=device))
        for start in range(0, len(windows), args.batch_size):
            batch = windows[start:start + args.batch_size]
            length = max(len(w) for w in batch)
            ids = torch.tensor([w + [bos] * (length - len(w)) for w in batch], dtype=torch.long)
            begin = time.perf_counter()
            module(ids.to(device))
            if cuda:
                torch.cuda.synchronize(device)
            forward_seconds += time.perf_counter() - begin
            batches += 1
            sequences += len(batch)
            tokens += sum(len(w) for w in batch)
    print(f"{batches} batches, {sequences} sequences, {tokens} tokens")
    print(f"forward_seconds {forward_seconds:.3f}")
    if cuda:
        print(f"peak_device_memory_bytes {torch.cuda.max_memory_allocated(device)}")


if __name__ == "__main__":
    main()
