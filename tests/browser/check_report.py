#!/usr/bin/env python3
"""Opens headscan reports in headless Chromium from file:// and checks them.

Usage:  check_report.py REPORTS_DIR ARTIFACTS_DIR
REPORTS_DIR holds the reports written by make_report_fixture (small, hostile, scripts, large, and
with --ablation's causal evidence ablation and hostile_ablation).

The pages carry their own self-test: opened with "?selftest" they drive their DOM (hover a head,
sort the table, hover tokens in the attention viewer, check images, links, scripts and blocked
requests) and write the results as JSON into <pre id="selftest">, read over the DevTools protocol
(browser.py: one Chromium for all pages). "?selftest=click" then clicks the last cell of the head map, and the head page it opens
tests itself in turn. Screenshots of the pages are written to ARTIFACTS_DIR.
Exit 0 when every check passes, 1 otherwise, 77 (skipped) without Chromium.
"""
import json
import os
import re
import shutil
import sys

from browser import CHROMIUM, Browser

failures = []
browser = None  # the one Chromium of this run (browser.Browser), started by main()


def url(path, query=""):
    return "file://" + os.path.abspath(path) + query


def selftest(path, query="?selftest"):
    """Opens the page with its self-test and returns the result it writes into <pre id="selftest">.
    With "?selftest=click" the index clicks a head, and the result is that head page's."""
    target = url(path, query)
    browser.open(target)
    # Until the new document commits, the previous one (and its result) is still there.
    arrived = "location.search.indexOf('selftest=clicked') >= 0" if "click" in query else f"location.href === {target!r}"
    return browser.wait_for_json(f"{arrived} ? (document.getElementById('selftest') || {{}}).textContent : ''",
                                 lambda report: True, f"the self-test of {path}{query}")


def expect(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name + (f"  [{detail}]" if detail and not ok else ""))
    if not ok:
        failures.append(name)


def expect_selftest(name, report):
    for check in report["checks"]:
        expect(f"{name}: {check['name']}", check["ok"], check["detail"])
    expect(f"{name}: self-test passed", report["pass"])


def static_scan(report_dir):
    """No file of the report refers to anything outside it."""
    absolute = re.compile(r"""(?:src|href|action|poster|srcset)\s*=\s*["']?\s*(?:[a-z][a-z0-9+.-]*:|//)|url\(\s*["']?\s*(?:https?:|//)|@import""", re.I)
    found = []
    for folder, _, files in os.walk(report_dir):
        for name in files:
            if not name.endswith((".html", ".js", ".css")):
                continue
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8") as f:
                text = f.read()
            found += [f"{path}: {m.group(0)}" for m in absolute.finditer(text)]
    return found


def check_report(name, report_dir, artifacts, layers, heads):
    index = os.path.join(report_dir, "index.html")
    last = f"L{layers - 1}H{heads - 1}"
    document = os.path.join(report_dir, "heads.json")
    if os.path.exists(document):  # heads are named by the model's layer index, which may skip layers
        with open(document, encoding="utf-8") as f:
            final = json.load(f)["heads"][-1]
        last = f"L{final['layer']}H{final['head']}"
    found = static_scan(report_dir)
    expect(f"{name}: no absolute URL in any page or script", not found, "; ".join(found[:5]))

    report = selftest(index)
    expect_selftest(f"{name} index", report)

    clicked = selftest(index, "?selftest=click")
    expect(f"{name}: clicking cell {last} opens its page", clicked.get("page") == "head" and clicked.get("id") == last,
           f"page {clicked.get('page')} {clicked.get('id')}")
    expect_selftest(f"{name} {last} (opened by a click)", clicked)

    head = selftest(os.path.join(report_dir, "heads", "L0H0.html"))
    expect_selftest(f"{name} L0H0", head)

    for page, shot in [(index, "index.png"), (os.path.join(report_dir, "heads", "L0H0.html"), "L0H0.png")]:
        target = os.path.join(artifacts, f"{name}_{shot}")
        browser.screenshot(url(page), target)
        expect(f"{name}: screenshot {os.path.basename(target)}", os.path.getsize(target) > 10000)
    return report, head


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    if not shutil.which(CHROMIUM):
        print(f"skipped: no Chromium at {CHROMIUM} (apt-get install chromium, or set HEADSCAN_CHROMIUM)")
        return 77
    reports, artifacts = sys.argv[1], sys.argv[2]
    os.makedirs(artifacts, exist_ok=True)
    with Browser() as started:
        global browser
        browser = started
        return check_all(reports, artifacts)


def check_all(reports, artifacts):

    switch = "head map colour switch recolours the cells"
    small, _ = check_report("small", os.path.join(reports, "small"), artifacts, 2, 4)
    expect("small: no colour switch without --ablation", all(c["name"] != switch for c in small["checks"]))
    check_report("large", os.path.join(reports, "large"), artifacts, 12, 12)
    check_report("scripts", os.path.join(reports, "scripts"), artifacts, 2, 3)

    # Markup in the model name, paths, warnings and tokens shows as text and runs nothing.
    index, head = check_report("hostile", os.path.join(reports, "hostile"), artifacts, 2, 4)
    expect("hostile: the model name shows as text", index["title"] == "</script><script>alert(1)</script>", index["title"])
    for token in ["<script>alert(1)</script>", "</script>", '"quoted"', "<img src=x onerror=alert(1)>"]:
        expect(f"hostile: token {token} shows as text in the viewer", token in head["tokens"], head["tokens"])

    # --ablation: the head map's colour switch recolours it, and the causal sections link heads.
    index, head = check_report("ablation", os.path.join(reports, "ablation"), artifacts, 4, 6)
    expect("ablation: the colour switch was tried", any(c["name"] == switch for c in index["checks"]))
    expect("ablation: L0H0's causal links were checked",
           any(c["name"] == "causal evidence links to head pages" for c in head["checks"]))
    index, _ = check_report("hostile_ablation", os.path.join(reports, "hostile_ablation"), artifacts, 2, 4)
    expect("hostile_ablation: the colour switch was tried", any(c["name"] == switch for c in index["checks"]))

    print(f"{len(failures)} failed" if failures else "all browser checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
