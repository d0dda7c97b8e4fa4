"""examples/ray_shards.py on a local Ray cluster the test starts (127.0.0.1, 2 CPUs, its own
temporary directory) and stops by its processes' ids: the report merged from three shards run as
Ray Data tasks equals the command line's single run, exactly (README, "Shards and merge")."""

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import DEMO, DEMO_CORPUS, ROOT, load_json, run_cli, without_run

# A cluster of the test's own on 127.0.0.1, without token authentication for the cluster and the
# example alike: `ray start` would otherwise turn it on when the user has a ~/.ray/auth_token.
RAY_ENV = {**os.environ, "RAY_AUTH_MODE": "disabled"}
# The demo corpus is 76 KB, two 64 KiB chunks: of three shards, 0 reads nothing, 1 the first chunk
# and 2 the second, so the merge adds an empty shard too.
SHARDS = 3


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def processes() -> dict:
    """pid → (parent pid, process group) of every process."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # after "pid (name) "
        table[int(entry)] = (int(fields[1]), int(fields[2]))
    return table


def cluster_pids(group: int) -> set:
    """The processes of the cluster `ray start` made in its own session: its process group (GCS,
    raylet, agents, daemonized away from it) and their descendants (workers start groups of their own)."""
    table = processes()
    pids = {pid for pid, (_, pgid) in table.items() if pgid == group}
    while True:
        children = {pid for pid, (parent, _) in table.items() if parent in pids} - pids
        if not children:
            return pids
        pids |= children


def stop(pids: set) -> None:
    """SIGTERM, and SIGKILL to what is left a second later (the GCS takes longer to end on SIGTERM)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + (1 if sig == signal.SIGTERM else 5)
        while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in pids):
            time.sleep(0.1)
        pids = {pid for pid in pids if Path(f"/proc/{pid}").exists()}
        if not pids:
            return


@pytest.fixture(scope="module")
def ray_cluster():
    """The address of a one-node Ray cluster, stopped (every process it started) after this file's
    tests, however they ended."""
    # Short: Ray's sockets live below it, and a Unix socket's path is at most 107 bytes.
    temp = tempfile.mkdtemp(prefix="ray-", dir="/tmp")
    port = free_port()
    ray = Path(sys.executable).parent / "ray"
    # A session of its own: every process of the cluster is in the process group `ray start` leads.
    start = subprocess.Popen([str(ray), "start", "--head", "--node-ip-address=127.0.0.1", f"--port={port}",
                              "--num-cpus=2", "--include-dashboard=false", "--disable-usage-stats",
                              f"--temp-dir={temp}"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             env=RAY_ENV, start_new_session=True)
    try:
        output, _ = start.communicate(timeout=60)
        if start.returncode != 0:
            raise AssertionError(f"ray start exited {start.returncode}:\n{output}")
        yield f"127.0.0.1:{port}"
    finally:
        stop(cluster_pids(start.pid) | ({start.pid} if start.poll() is None else set()))
        subprocess.run(["rm", "-rf", temp], check=False)


def test_ray_shards_merge_to_the_single_run(ray_cluster, tmp_path):
    single = tmp_path / "single"
    run_cli(DEMO, DEMO_CORPUS, "-o", single, "--parser", "none", "--threads", "1", "-q", "--no-html", "--no-plots")
    out = tmp_path / "ray"
    result = subprocess.run([sys.executable, str(ROOT / "examples" / "ray_shards.py"), str(DEMO), str(DEMO_CORPUS),
                             str(out), "--shards", str(SHARDS), "--address", ray_cluster, "--cpus-per-shard", "1",
                             "--options", json.dumps({"parser": "none"})],
                            capture_output=True, text=True, env=RAY_ENV, timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    for index in range(SHARDS):
        assert f"shard {index}/{SHARDS}: " in result.stdout
    sequences = [load_json(out / "shards" / str(i) / "state.json")["counts"]["sequences"] for i in range(SHARDS)]
    assert sequences[0] == 0 and sequences[1] > 0 and sequences[2] > 0  # the corpus was split
    merged = load_json(out / "report" / "heads.json")
    expected = load_json(single / "heads.json")
    assert merged["run"]["shards"] == SHARDS
    assert sum(sequences) == expected["corpus"]["sequences"]
    assert without_run(merged) == without_run(expected)


def test_ray_shards_bad_option_is_exit_2(ray_cluster, tmp_path):
    """An option a shard refuses fails the job with the shard's message, exit 2, and no report."""
    out = tmp_path / "ray"
    result = subprocess.run([sys.executable, str(ROOT / "examples" / "ray_shards.py"), str(DEMO), str(DEMO_CORPUS),
                             str(out), "--shards", "1", "--address", ray_cluster,
                             "--options", json.dumps({"parser": "none", "max_sequences": 4})],
                            capture_output=True, text=True, env=RAY_ENV, timeout=180)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "shard 0/1 failed on " in result.stderr
    assert "--max-sequences 4 with --shard 0/1: a shard cannot know" in result.stderr
    assert "ray_shards: error: 1 shard(s) failed (above); no report written" in result.stderr
    assert not (out / "report").exists()
