"""headscan on a Ray cluster: the shards of one analysis as a Ray Data job, then their merge.

    python examples/ray_shards.py MODEL CORPUS OUT --shards N [--address HOST:PORT]
        [--cpus-per-shard C] [--options '{"parser": "none", "batch_size": 8}'] [--force]

Ray Data maps over the shard numbers 0 … N-1 (``ray.data.from_items`` then ``map_batches``, one
shard a task, ``--cpus-per-shard`` CPUs each); each task runs ``headscan.run_shard`` (what
``headscan MODEL CORPUS --shard I/N -o OUT/shards/I`` does) and returns where its state is. The
driver then merges the N states into ``OUT/report`` (``headscan.merge``, ``headscan merge``): the
report a single run writes, equal in every number (README, "Shards and merge"). MODEL, CORPUS and
OUT must be paths every node of the cluster reads and writes alike (a shared file system), as for
Slurm's array jobs. ``--options`` are scan()'s keyword options as a JSON object, the same for every
shard; ``threads`` defaults to ``--cpus-per-shard`` (a single run to compare against must use the
same threads). Exit 2 for bad input (a shard's or the merge's InputError), 1 for any other failure;
each failed shard's message is printed.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import time
from pathlib import Path

import headscan
import ray
import ray.data


def analyse_shards(batch: dict, *, model: str, corpus: str, shards: int, out: str, force: bool,
                   options: dict) -> dict:
    """A map_batches function: the shards whose numbers the batch holds, each run to its state.
    headscan's errors come back as rows (``error``, and ``bad_input`` for an InputError) rather
    than as the task's exception, which Ray wraps in its own types on the way to the driver."""
    rows = {"shard": [], "state": [], "seconds": [], "node": [], "error": [], "bad_input": []}
    for index in batch["shard"]:
        started = time.monotonic()
        state, error, bad_input = "", "", False
        try:
            state = str(headscan.run_shard(model, corpus, shard=(int(index), shards),
                                           output=Path(out) / "shards" / str(index), force=force, progress=False,
                                           **options))
        except (headscan.InputError, headscan.RunError) as failure:
            error, bad_input = str(failure), isinstance(failure, headscan.InputError)
        rows["shard"].append(int(index))
        rows["state"].append(state)
        rows["seconds"].append(time.monotonic() - started)
        rows["node"].append(socket.gethostname())
        rows["error"].append(error)
        rows["bad_input"].append(bad_input)
    return rows


def run(args: argparse.Namespace) -> Path:
    options = json.loads(args.options)
    if not isinstance(options, dict):
        raise headscan.InputError(f"--options: a JSON object of scan()'s options, not {args.options}")
    options.setdefault("threads", args.cpus_per_shard)
    ray.init(address=args.address, log_to_driver=True)
    try:
        shards = ray.data.from_items([{"shard": index} for index in range(args.shards)])
        done = shards.map_batches(
            analyse_shards, batch_size=1, num_cpus=args.cpus_per_shard,
            fn_kwargs=dict(model=str(Path(args.model).resolve()), corpus=str(Path(args.corpus).resolve()),
                           shards=args.shards, out=str(Path(args.out).resolve()), force=args.force, options=options))
        rows = sorted(done.take_all(), key=lambda row: row["shard"])
    finally:
        ray.shutdown()
    for row in rows:
        if row["error"]:
            print(f"shard {row['shard']}/{args.shards} failed on {row['node']}: {row['error']}", file=sys.stderr)
        else:
            print(f"shard {row['shard']}/{args.shards}: {row['seconds']:.1f} s on {row['node']}, "
                  f"state in {row['state']}")
    failed = [row for row in rows if row["error"]]
    if failed:
        raise ShardsFailed(len(failed), any(row["bad_input"] for row in failed))
    numbers = [row["shard"] for row in rows]
    if numbers != list(range(args.shards)):  # a shard lost or run twice would be refused by the merge too
        raise RuntimeError(f"the job returned the shards {numbers}, not 0 to {args.shards - 1} once each")
    report = headscan.merge([row["state"] for row in rows], Path(args.out) / "report", force=args.force)
    print(f"report: {report / 'heads.json'}")
    return report


class ShardsFailed(Exception):
    """Shards that headscan refused (bad_input: exit 2) or that failed while running (exit 1)."""

    def __init__(self, count: int, bad_input: bool):
        super().__init__(f"{count} shard(s) failed (above); no report written")
        self.bad_input = bad_input


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="the model's archive (.pt or .pt2), on a path every node reads")
    parser.add_argument("corpus", help="the corpus file, on a path every node reads")
    parser.add_argument("out", help="OUT/shards/I for the states, OUT/report for the report")
    parser.add_argument("--shards", type=int, required=True, help="how many shards (N)")
    parser.add_argument("--address", default=None,
                        help="the Ray cluster's HOST:PORT (default: RAY_ADDRESS, else a local Ray)")
    parser.add_argument("--cpus-per-shard", type=int, default=1, help="CPUs Ray gives each shard's task")
    parser.add_argument("--options", default="{}", help="scan()'s keyword options as a JSON object")
    parser.add_argument("--force", action="store_true", help="replace earlier states and report in OUT")
    args = parser.parse_args(argv)
    if args.shards < 1 or args.cpus_per_shard < 1:
        parser.error("--shards and --cpus-per-shard must be at least 1")
    try:
        run(args)
    except (json.JSONDecodeError, headscan.InputError) as error:
        print(f"ray_shards: error: {error}", file=sys.stderr)
        return 2
    except ShardsFailed as error:
        print(f"ray_shards: {'error' if error.bad_input else 'failed'}: {error}", file=sys.stderr)
        return 2 if error.bad_input else 1
    except Exception as error:  # noqa: BLE001 (a task or the cluster failed: Ray's error, whatever it is)
        print(f"ray_shards: failed: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
