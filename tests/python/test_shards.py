"""headscan.run_shard() and headscan.merge(): the command line's --shard and merge from Python,
with its checks and messages."""

import pytest
import torch

import headscan
from conftest import DEMO, DEMO_CORPUS, load_json, run_cli, without_run


def test_run_shard_and_merge_equal_the_command_line(tmp_path):
    """Three shards (the demo corpus's two chunks and an empty one) run and merged in Python give
    the heads.json of the command line's merge of the same states, and of its single run."""
    states = [headscan.run_shard(DEMO, DEMO_CORPUS, shard=(i, 3), output=tmp_path / "py" / str(i), parser="none",
                                 threads=1, progress=False) for i in range(3)]
    assert states == [tmp_path / "py" / str(i) for i in range(3)]
    assert headscan.merge(states, tmp_path / "py-report", html=False, plots=False) == tmp_path / "py-report"
    run_cli("merge", *states, "-o", tmp_path / "cli-report", "-q", "--no-html", "--no-plots")
    run_cli(DEMO, DEMO_CORPUS, "-o", tmp_path / "single", "--parser", "none", "--threads", "1", "-q", "--no-html",
            "--no-plots")
    merged = load_json(tmp_path / "py-report" / "heads.json")
    assert merged["run"]["shards"] == 3
    assert without_run(merged) == without_run(load_json(tmp_path / "cli-report" / "heads.json"))
    assert without_run(merged) == without_run(load_json(tmp_path / "single" / "heads.json"))
    # merge(thresholds=) is --threshold: the labels move with it.
    assert "previous-token" in {head["primary"] for head in merged["heads"]}
    strict = load_json(headscan.merge(states, tmp_path / "strict", thresholds={"previous_token": 1.0}, html=False,
                                      plots=False) / "heads.json")
    assert strict["thresholds"]["previous_token"] == 1.0
    assert "previous-token" not in {head["primary"] for head in strict["heads"]}


def test_run_shard_and_merge_refusals(tmp_path, corpus_lines):
    with pytest.raises(headscan.InputError, match="corpus is a list: a shard reads its slice of a corpus file"):
        headscan.run_shard(DEMO, corpus_lines, shard=(0, 2), output=tmp_path / "s")
    with pytest.raises(headscan.InputError, match="model is a RecursiveScriptModule: a shard analyses an archive"):
        headscan.run_shard(torch.jit.load(str(DEMO)), DEMO_CORPUS, shard=(0, 2), output=tmp_path / "s")
    with pytest.raises(headscan.InputError, match="--shard 2/2: the index must be below the number of shards"):
        headscan.run_shard(DEMO, DEMO_CORPUS, shard=(2, 2), output=tmp_path / "s", progress=False)
    with pytest.raises(headscan.InputError, match="--max-sequences 3 with --shard 0/2"):
        headscan.run_shard(DEMO, DEMO_CORPUS, shard="0/2", output=tmp_path / "s", max_sequences=3, progress=False)
    with pytest.raises(TypeError, match=r"shard= takes \(I, N\)"):
        headscan.run_shard(DEMO, DEMO_CORPUS, shard=(0.0, 2), output=tmp_path / "s")
    with pytest.raises(TypeError, match="run_shard\\(\\) got an unexpected keyword argument 'quiet'"):
        headscan.run_shard(DEMO, DEMO_CORPUS, shard=(0, 2), output=tmp_path / "s", quiet=True)
    assert not (tmp_path / "s").exists()
    state = headscan.run_shard(DEMO, DEMO_CORPUS, shard=(1, 2), output=tmp_path / "s", parser="none",
                               progress=False)
    with pytest.raises(headscan.InputError, match="shard\\(s\\) 0 of 2 are missing"):
        headscan.merge([state], tmp_path / "report")
    with pytest.raises(headscan.InputError, match="is given twice"):
        headscan.merge([state, state], tmp_path / "report")
    with pytest.raises(TypeError, match="shards= takes a list"):
        headscan.merge(state, tmp_path / "report")
    assert not (tmp_path / "report").exists()
