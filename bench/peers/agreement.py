#!/usr/bin/env python3
"""Do the peers' scores agree with headscan's? (bench/peers/run.sh runs it after the timings.)

    python bench/peers/agreement.py HEADS_JSON PEER_JSON... [--json OUT]

PEER_JSON: what bench/peers/peer.py --out wrote for transformer-lens and nnsight. Prints, per peer
and score, the largest |peer − headscan| over the heads, for headscan's definitions computed from
the peer's captured attention (scores.py) against heads.json (scores there are rounded to 6
decimals, so 5e-7 is agreement); then TransformerLens' head_detector scores beside headscan's,
the definitional differences, and the largest difference between TransformerLens' own
detect_head and the same definitions computed from nnsight's capture.
"""

import argparse
import json
import sys

import torch

SCORES = ("previous_token", "first_token", "duplicate_token", "induction")


def heads_json_scores(path):
    with open(path, encoding="utf-8") as f:
        report = json.load(f)
    layers = 1 + max(h["layer"] for h in report["heads"])
    heads = 1 + max(h["head"] for h in report["heads"])
    out = {}
    for name in SCORES:
        table = torch.full((layers, heads), float("nan"), dtype=torch.float64)
        for head in report["heads"]:
            value = head["scores"].get(name)
            if value is not None:
                table[head["layer"], head["head"]] = value
        out[name] = table
    return out, report


def max_diff(a, b):
    return float((torch.as_tensor(a, dtype=torch.float64) - torch.as_tensor(b, dtype=torch.float64)).abs().max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("heads_json")
    parser.add_argument("peers", nargs="+")
    parser.add_argument("--tokens", type=int, default=256,
                        help="tokens per corpus window, BOS included; 0: the windows' lengths vary")
    parser.add_argument("--json", help="write the figures here too")
    args = parser.parse_args()
    headscan, report = heads_json_scores(args.heads_json)
    peers = {}
    for path in args.peers:
        with open(path, encoding="utf-8") as f:
            run = json.load(f)
        peers[run["tool"]] = run["scores"]
    figures = {"headscan_definitions": {}, "detector": {}}

    print("headscan's definitions from each peer's captured attention, against heads.json "
          "(largest |difference| over the heads):\n")
    print("| score | " + " | ".join(peers) + " |")
    print("|---|" + "---|" * len(peers))
    for name in SCORES:
        row = {tool: max_diff(scores[name], headscan[name]) for tool, scores in peers.items()}
        figures["headscan_definitions"][name] = row
        print(f"| `{name}` | " + " | ".join(f"{value:.1e}" for value in row.values()) + " |")

    probe_ids_differ = [tool for tool, scores in peers.items()
                        if "probe_ids" in scores and scores["probe_ids"] != peers[next(iter(peers))]["probe_ids"]]
    if probe_ids_differ:
        print(f"\nwarning: the probes' ids differ between peers: {probe_ids_differ}", file=sys.stderr)
    lengths = report.get("probes", {}).get("repeat_lengths")
    repeats = report.get("probes", {}).get("repeats") or 4
    rebuilt = [(len(p) - 1) // repeats for p in next(iter(peers.values())).get("probe_ids", [])]
    print(f"\nprobes: heads.json's repeat lengths {lengths}, rebuilt by probes.py {rebuilt}")

    if "transformer-lens" in peers and "detector" in peers["transformer-lens"]:
        detector = peers["transformer-lens"]["detector"]
        length = args.tokens
        print("\nTransformerLens' head_detector (error_measure \"mul\", its default), mean over the heads "
              "[largest head], beside headscan's:\n")
        print("| score | tokens | head_detector | headscan | relation |")
        print("|---|---|---|---|---|")
        tl_prev = torch.tensor(detector["corpus"]["previous_token_head"], dtype=torch.float64)
        hs_prev = headscan["previous_token"]
        if length > 0:
            relation = (f"head_detector = headscan × {length - 1}/{length} (it divides by all {length} rows, "
                        f"BOS's too): largest |difference| {max_diff(tl_prev, hs_prev * (length - 1) / length):.1e}")
        else:
            relation = ("head_detector: per window, sum over all T rows / T (BOS's row too), then the mean over "
                        "windows; headscan: the mean over every window's queries 1 … T − 1, pooled (the windows' "
                        "lengths vary, so no single factor relates them)")
        rows = [
            ("previous-token", "corpus", tl_prev, hs_prev, relation),
            ("duplicate-token", "corpus", torch.tensor(detector["corpus"]["duplicate_token_head"]), None,
             "headscan scores duplicate tokens on its probes only"),
            ("induction", "corpus", torch.tensor(detector["corpus"]["induction_head"]), None,
             "headscan's corpus analogue is induction_text (earlier occurrences s < i − 1 only)"),
            ("duplicate-token", "probes", torch.tensor(detector["probes"]["duplicate_token_head"]),
             headscan["duplicate_token"],
             "head_detector: per probe, sum over all T rows / T, then the mean over probes; headscan: "
             "the mean over the queries of repeats 2–4 (those with an earlier occurrence), pooled"),
            ("induction", "probes", torch.tensor(detector["probes"]["induction_head"]), headscan["induction"],
             "as duplicate-token; head_detector's targets also count s = i − 1, which a probe never has"),
        ]
        for label, source, tl, hs, relation in rows:
            hs_text = f"{float(hs.mean()):.4f} [{float(hs.max()):.4f}]" if hs is not None else "—"
            print(f"| {label} | {source} | {float(tl.mean()):.4f} [{float(tl.max()):.4f}] | {hs_text} | {relation} |")
            figures["detector"][f"{label} {source}"] = {"head_detector_mean": float(tl.mean()),
                                                         "headscan_mean": float(hs.mean()) if hs is not None else None}
        if length > 0:
            figures["detector"]["previous_token_rescaled_max_diff"] = max_diff(tl_prev, hs_prev * (length - 1) / length)
        if "nnsight" in peers and "detector" in peers["nnsight"]:
            diff = max(max_diff(peers["nnsight"]["detector"][source][name], detector[source][name])
                       for source in detector for name in detector[source])
            figures["detector"]["nnsight_vs_transformer_lens"] = diff
            print(f"\nhead_detector's definitions computed from nnsight's capture (scores.py) against "
                  f"TransformerLens' own detect_head: largest |difference| {diff:.1e}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(figures, out, indent=1)


if __name__ == "__main__":
    main()
