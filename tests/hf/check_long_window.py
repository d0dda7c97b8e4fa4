#!/usr/bin/env python3
"""A sliding-window model exported at 4,096 tokens: its program holds no [T, T] tensor and headscan's
analysis of a 4,096-token sequence equals transformers' eager attention.

    check_long_window.py HEADSCAN WORKDIR

A randomly initialized Gemma 3 (a sliding layer of WINDOW tokens, then a full one; positions for
4,096 tokens) saved with save_pretrained, then, as check_export_pt2.py does for its architectures:
`headscan export MODEL_DIR MODEL.pt2 --max-length 4096` in a new process; the program's
headscan::attention calls take the keys' padding [B, 1, 1, T], the sliding window
(window_left WINDOW - 1) and the causal rule, and no tensor of it is [..., T, T]; `headscan MODEL.pt2
CORPUS --max-length 4096` on a line of more than 4,096 tokens (its first window of 4,096, the rest)
and a short line; every head's previous_token, first_token and entropy within 1e-5 of transformers'
eager attention (output_attentions) on each sequence alone.

Exit 0 when it passes, 1 otherwise.
"""

import os
import shutil
import sys
import time

sys.dont_write_bytecode = True

import check_export_pt2  # noqa: E402 (tests/hf/)
from hf_models import CORPUS, SMALL, build_model_dir, pt2_architecture  # noqa: E402

LONG = 4096
WINDOW = 512  # Gemma 3 270M's: the export checks lengths of 512, 513 and 2,048 tokens
ARCH = pt2_architecture(
    "gemma3_long", "Gemma3ForCausalLM", "llama",
    lambda: ("Gemma3TextConfig", dict(SMALL, max_position_embeddings=LONG, num_key_value_heads=2, head_dim=16,
                                      query_pre_attn_scalar=16, sliding_window=WINDOW,
                                      layer_types=["sliding_attention", "full_attention"])),
    bos="<s>", max_length=LONG)
ARCH["positions"] = LONG  # the tokenizer's model_max_length
check_export_pt2.COMPACT_MASK[ARCH["name"]] = {(True, WINDOW - 1, -1, 0, None, False), check_export_pt2.CAUSAL}


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    headscan, work = os.path.abspath(argv[1]), os.path.abspath(argv[2])
    os.makedirs(work, exist_ok=True)
    corpus = os.path.join(work, "corpus.txt")
    with open(corpus, "w", encoding="utf-8") as f:  # a line of some 5,000 tokens and one of about 40
        f.write(" ".join(CORPUS * 40) + "\n" + CORPUS[1] + " " + CORPUS[5] + "\n")
    start = time.time()
    shutil.rmtree(os.path.join(work, ARCH["name"]), ignore_errors=True)  # a run before this one's archive
    build_model_dir(ARCH, check_export_pt2.paths(ARCH, work)[0])
    try:
        worst = check_export_pt2.check(ARCH, headscan, corpus, work, observers=False, exporters=None)
    except Exception as e:  # noqa: BLE001
        print(f"{ARCH['name']} FAIL {type(e).__name__}: {e}")
        return 1
    print(f"{ARCH['name']} ok max |difference| " + ", ".join(f"{s} {w:.1e}" for s, w in worst.items()) +
          f" ({time.time() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
