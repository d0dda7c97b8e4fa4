#!/usr/bin/env python3
"""End to end: headscan's own report of a fixture model, opened in headless Chromium, and its size.

Usage:  check_headscan_report.py HEADSCAN MODEL.pt WORKDIR ARTIFACTS_DIR

Writes a corpus (words w3..w63 of the fixture tokenizer, plus a line of markup and quotes) and the
same corpus repeated 100 times, runs headscan on both, and checks that
  - the report of the 100× corpus has the same size within 10 % (the examples are a fixed set),
  - the report passes the pages' self-tests in Chromium (see check_report.py), also when its
    head map cell is clicked, and shows the markup line as text.
Exit 0 when every check passes, 1 otherwise, 77 (skipped) without Chromium or when headscan
writes no HTML.
"""
import os
import random
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_report  # noqa: E402


def report_size(directory):
    return sum(os.path.getsize(os.path.join(folder, name)) for folder, _, files in os.walk(directory) for name in files)


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    headscan, model, work, artifacts = sys.argv[1:]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    rng = random.Random(0)
    lines = [" ".join(f"w{rng.randrange(3, 64)}" for _ in range(rng.randrange(5, 30))) for _ in range(40)]
    lines.insert(1, "w5 <script>alert(1)</script> </script> \"quoted\" 'single' w6")
    small, large = os.path.join(work, "corpus.txt"), os.path.join(work, "corpus_x100.txt")
    with open(small, "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(large, "w") as f:
        f.write(("\n".join(lines) + "\n") * 100)

    reports = {}
    for name, corpus in [("small", small), ("large", large)]:
        reports[name] = os.path.join(work, f"report_{name}")
        # The word corpus has no English to parse: link-grammar would only spend time.
        subprocess.run([headscan, model, corpus, "-o", reports[name], "--force", "--parser", "none"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if not os.path.exists(os.path.join(reports["small"], "index.html")):
        print("skipped: headscan wrote no index.html")
        return 77

    a, b = report_size(reports["small"]), report_size(reports["large"])
    check_report.expect(f"report of the 100x corpus has the same size within 10% ({a} vs {b} bytes)",
                        abs(b - a) <= 0.10 * a)

    if not shutil.which(check_report.CHROMIUM):
        print(f"skipped: no Chromium at {check_report.CHROMIUM}")
        return 77
    os.makedirs(artifacts, exist_ok=True)
    layers, heads = 2, 4  # the fixture models (tests/fixtures/make_models.py)
    with check_report.Browser() as browser:
        check_report.browser = browser
        check_report.check_report("headscan", reports["small"], artifacts, layers, heads)
    with open(os.path.join(reports["small"], "data", "examples.js"), encoding="utf-8") as f:
        check_report.expect("examples are stored with '<' escaped", "<" not in f.read())
    failures = check_report.failures
    print(f"{len(failures)} failed" if failures else "all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
