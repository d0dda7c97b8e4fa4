"""Fixtures of the wheel's tests: the demo model (data/demo.pt) and a traced toy transformer whose
heads are planted, built here (tests/python/toy_model.py)."""

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "data" / "demo.pt"
DEMO_CORPUS = ROOT / "data" / "demo_corpus.txt"


@pytest.fixture(scope="session")
def demo_tokenizer(tmp_path_factory) -> Path:
    """The demo's tokenizer.json, read out of its archive."""
    path = tmp_path_factory.mktemp("tokenizer") / "tokenizer.json"
    with zipfile.ZipFile(DEMO) as archive:
        name = next(n for n in archive.namelist() if n.endswith("extra/tokenizer.json"))
        path.write_bytes(archive.read(name))
    return path


@pytest.fixture(scope="session")
def corpus_lines() -> list:
    return DEMO_CORPUS.read_text(encoding="utf-8").splitlines()[:24]


@pytest.fixture(scope="session")
def corpus_file(tmp_path_factory, corpus_lines) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text("\n".join(corpus_lines) + "\n", encoding="utf-8")
    return path


def run_cli(*args, check=True):
    """The console script of the installed wheel (beside this Python), as a user runs it."""
    script = Path(sys.executable).parent / "headscan"
    result = subprocess.run([str(script), *map(str, args)], capture_output=True, text=True, env=os.environ.copy())
    if check and result.returncode != 0:
        raise AssertionError(f"headscan {' '.join(map(str, args))} exited {result.returncode}:\n{result.stderr}")
    return result


def without_run(document: dict) -> dict:
    """heads.json without what differs between two runs of one analysis (its timings)."""
    return {key: value for key, value in document.items() if key != "run"}


def load_json(path: Path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))
