#!/usr/bin/env python3
"""The corpus of bench/smollm2/run.sh: DOCUMENTS English documents (default 48) of 6 to 12
sentences each, one per line, from bench/peers/english.py's seeded grammar (the same text on every
machine), so that link-grammar parses them.

    python bench/smollm2/corpus.py OUT [--documents N] [--seed S]
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "peers"))
from english import Grammar  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--documents", type=int, default=48)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    grammar = Grammar(args.seed)
    with open(args.out, "w", encoding="utf-8") as f:
        for _ in range(args.documents):
            count = grammar.random.randint(6, 12)
            f.write(" ".join(grammar.sentence() for _ in range(count)) + "\n")


if __name__ == "__main__":
    main()
