#!/usr/bin/env python3
"""End to end: `headscan compare` of three checkpoints of planted models, its tables read back and
its page opened in headless Chromium.

Usage:  check_compare_report.py HEADSCAN FIXTURE_DIR WORKDIR ARTIFACTS_DIR

Analyses checkpoint_{200,0,100}.pt (tests/fixtures/make_models.py: heads form by construction; the
step is in their headscan.json), runs headscan compare on the three reports, and checks that
  - compare.csv, read with Python's csv module, holds for each run exactly the rows and cells of
    that run's heads.csv (itself checked against heads.json by check_heads_csv.py), runs in step
    order;
  - every value of compare.json equals the run's heads.json;
  - the page passes its self-test in Chromium: one trajectory per head in every small multiple,
    the highlighted heads, a point per run in the phase-change figure, the run slider, the tooltip,
    the sortable diff table, images loaded, no network request and no absolute URL;
  - the PNGs of the phase-change figure, the small multiples and the head maps exist.
A screenshot of the page lands in ARTIFACTS_DIR. Exit 0 when every check passes, 1 otherwise, 77
(skipped) without Chromium.
"""
import csv
import json
import os
import random
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_report  # noqa: E402

STEPS = [200, 0, 100]  # analysed out of order: compare orders them by step


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    headscan, fixtures, work, artifacts = sys.argv[1:]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    rng = random.Random(0)
    corpus = os.path.join(work, "corpus.txt")
    with open(corpus, "w") as f:
        for _ in range(40):
            f.write(" ".join(f"w{rng.randrange(3, 64)}" for _ in range(rng.randrange(5, 30))) + "\n")
    runs = []
    for step in STEPS:
        run = os.path.join(work, f"step-{step}")
        subprocess.run([headscan, os.path.join(fixtures, f"checkpoint_{step}.pt"), corpus, "-o", run, "--parser",
                        "none", "-q"], check=True)
        runs.append(run)
    out = os.path.join(work, "compare")
    subprocess.run([headscan, "compare", *runs, "-o", out, "-q"], check=True)
    expect = check_report.expect

    compare = json.load(open(os.path.join(out, "compare.json"), encoding="utf-8"))
    ordered = sorted(runs, key=lambda run: int(run.rsplit("-", 1)[1]))
    expect("runs in step order", [r["path"] for r in compare["runs"]] == ordered, [r["path"] for r in compare["runs"]])
    rows = read_csv(os.path.join(out, "compare.csv"))
    expect("compare.csv has a row per run and head", len(rows) == 3 * 8, len(rows))
    for index, run in enumerate(ordered):
        report = json.load(open(os.path.join(run, "heads.json"), encoding="utf-8"))
        expect(f"run {index}: step", compare["runs"][index]["step"] == report["model"]["step"])
        own = read_csv(os.path.join(run, "heads.csv"))
        mine = [row for row in rows if row["run"] == str(index)]
        expect(f"run {index}: as many rows as its heads.csv", len(mine) == len(own))
        for theirs, ours in zip(own, mine):
            different = [column for column, value in theirs.items() if ours.get(column) != value]
            expect(f"run {index} L{theirs['layer']}H{theirs['head']}: compare.csv equals heads.csv", not different,
                   different)
            expect(f"run {index}: run name and step", ours["run_name"] == os.path.basename(run) and
                   ours["step"] == str(report["model"]["step"]))
        for head in report["heads"]:
            entry = next(h for h in compare["heads"] if h["layer"] == head["layer"] and h["head"] == head["head"])
            different = [name for name, value in head["scores"].items() if entry["scores"][name][index] != value]
            expect(f"run {index} L{head['layer']}H{head['head']}: compare.json equals heads.json",
                   not different and entry["labels"][index] == head["labels"] and
                   entry["primary"][index] == head["primary"], different)

    for name in ["phase_change.png", "heads_0.png", "heads_1.png", "heads_2.png", "trajectories_induction.png",
                 "trajectories_previous_token.png", "trajectories_first_token.png", "trajectories_entropy.png"]:
        path = os.path.join(out, "plots", name)
        expect(f"plots/{name} exists", os.path.isfile(path) and os.path.getsize(path) > 0)

    if not shutil.which(check_report.CHROMIUM):
        print(f"skipped: no Chromium at {check_report.CHROMIUM}")
        return 77
    os.makedirs(artifacts, exist_ok=True)
    found = check_report.static_scan(out)
    expect("no absolute URL in the page", not found, "; ".join(found[:5]))
    with check_report.Browser() as browser:
        check_report.browser = browser
        index = os.path.join(out, "index.html")
        report = check_report.selftest(index)
        check_report.expect_selftest("compare", report)
        expect("the self-test ran the compare checks",
               any(c["name"].startswith("one trajectory per head") for c in report["checks"]))
        browser.screenshot(check_report.url(index), os.path.join(artifacts, "compare.png"), height=3200)
    failures = check_report.failures
    print(f"{len(failures)} failed" if failures else "all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
