"""bench/kv_plan.py on a model whose heads are known: the planted copy model (make_copy_model.py,
one induction head among local heads) is exported and analysed by the wheel's command line, and
the bench measures its plan at 256 and 512 tokens of context against the whole cache, kvpress's
on-the-fly DuoAttention scores and random streaming heads at the same compression. Run in the
kvpress venv (tests/kvpress/run.sh)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from make_copy_model import FULL_KV_HEADS, build

ROOT = Path(__file__).resolve().parents[2]
LENGTHS = (256, 512)
SEEDS = 5


def headscan(*args):
    """The wheel's command line in this venv (python -m headscan is the console script)."""
    result = subprocess.run([sys.executable, "-m", "headscan", *map(str, args)], capture_output=True, text=True)
    assert result.returncode == 0, f"headscan {' '.join(map(str, args))} exited {result.returncode}:\n{result.stderr}"


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    work = tmp_path_factory.mktemp("copy")
    model_dir = build(work)
    headscan("export", model_dir, work / "model.pt2")
    report = work / "report"
    headscan(work / "model.pt2", work / "corpus.txt", "-o", report, "--max-length", 512, "--needle-lengths", 256,
             "--parser", "none", "--no-plots", "-q", "--threads", 1)
    out = work / "measured.json"
    command = [sys.executable, ROOT / "bench" / "kv_plan.py", model_dir, report,
               "--lengths", ",".join(map(str, LENGTHS)), "--seeds", SEEDS, "--haystacks", 1, "--threads", 1,
               "--fly-tokens", 256, "--out", out]
    result = subprocess.run(list(map(str, command)), capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return report, json.loads(out.read_text(encoding="utf-8")), result.stdout


def test_the_plan_is_the_planted_heads(measured):
    report, result, _ = measured
    rows = (report / "kv_plan" / "full_attention_heads.tsv").read_text().split()
    assert [int(value) for value in rows] == [value for row in FULL_KV_HEADS for value in row]
    assert result["masks"]["plan"] == [[1 - value for value in row] for row in FULL_KV_HEADS]
    assert result["streaming_kv_heads"] == 7 and result["kv_heads"] == 8


def test_every_method_streams_as_many_heads(measured):
    _, result, _ = measured
    count = result["streaming_kv_heads"]
    assert sum(map(sum, result["masks"]["on-the-fly"])) == count
    assert len(result["masks"]["random"]) == SEEDS
    assert all(sum(map(sum, mask)) == count for mask in result["masks"]["random"])


@pytest.mark.parametrize("length", LENGTHS)
def test_the_plan_keeps_what_the_full_cache_does(measured, length):
    """The plan beats random heads and matches or beats on-the-fly scores (no tolerance: the
    accuracies are shares of the same probes' tokens), and never beats the whole cache."""
    _, result, _ = measured
    row = next(row for row in result["lengths"] if row["length"] == length)
    methods = {name: values["needle_accuracy"] for name, values in row["methods"].items()}
    assert methods["full"] == 1.0  # the planted induction head copies every needle token
    assert methods["full"] >= methods["plan"] == 1.0
    assert methods["plan"] >= methods["on-the-fly"]
    assert methods["plan"] > methods["random"]
    seeds = row["methods"]["random"]["seeds"]
    assert methods["random"] == pytest.approx(sum(s["needle_accuracy"] for s in seeds) / SEEDS)
    losses = {name: values["loss"] for name, values in row["methods"].items()}
    assert losses["plan"] == pytest.approx(losses["full"], abs=1e-4)
    assert losses["random"] > losses["plan"]
    assert row["kv_kept"] == pytest.approx(1 - 7 / 8 * (1 - (4 + 64) / length), abs=1e-6)


def test_the_report_section_and_table(measured):
    report, result, stdout = measured
    assert json.loads((report / "kv_plan" / "measured.json").read_text(encoding="utf-8")) == result
    page = (report / "kv_plan" / "measured.html").read_text(encoding="utf-8")
    assert "KV-cache plan measured" in page and "<script" not in page and "http" not in page.replace(
        "http-equiv", "")
    assert "7 of 8 key/value heads streaming" in stdout
    assert sum(" random " in line for line in stdout.splitlines()) == len(LENGTHS)
