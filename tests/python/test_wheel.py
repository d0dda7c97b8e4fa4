"""The installed wheel: the console script, scan() on paths, live modules and strings, the
report's DataFrame and directory, errors, Ctrl-C and compare(). Run by tests/python/run.sh in a
fresh venv that has the wheel installed (README, "Tests")."""

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest
import torch

import headscan
from conftest import DEMO, ROOT, load_json, run_cli, without_run
from toy_model import traced_toy


def heads_of(document: dict) -> list:
    return document["heads"]


def test_the_console_script_runs_the_demo(tmp_path, corpus_file):
    version = run_cli("--version").stdout
    assert version.startswith("headscan ") and "LibTorch 2.11" in version
    out = tmp_path / "report"
    run_cli(DEMO, corpus_file, "-o", out, "--parser", "none", "-q")
    document = load_json(out / "heads.json")
    primary = {(h["layer"], h["head"]): h["primary"] for h in heads_of(document)}
    assert primary[(1, 0)] in ("induction", "retrieval")
    assert "induction" in heads_of(document)[1]["labels"]
    assert (out / "index.html").is_file() and (out / "plots" / "heads.png").is_file()
    # Bad input is exit 2 with the CLI's message, as from a build of the checkout.
    missing = run_cli(DEMO, tmp_path / "missing.txt", "-o", tmp_path / "x", check=False)
    assert missing.returncode == 2 and "headscan: error:" in missing.stderr


def test_scan_and_the_cli_write_the_same_report(tmp_path, corpus_file):
    cli = tmp_path / "cli"
    run_cli(DEMO, corpus_file, "-o", cli, "--parser", "none", "--max-length", "64", "--seed", "3", "-q")
    report = headscan.scan(DEMO, corpus_file, parser="none", max_length=64, seed=3, progress=False)
    saved = report.save(tmp_path / "python")
    assert without_run(load_json(saved / "heads.json")) == without_run(load_json(cli / "heads.json"))
    assert without_run(report.json) == without_run(load_json(cli / "heads.json"))
    assert sorted(p.name for p in saved.iterdir()) == sorted(p.name for p in cli.iterdir())
    assert (saved / "idf.txt").read_text() == (cli / "idf.txt").read_text()
    # save() keeps what is there, as the CLI does, unless told to replace an earlier report.
    with pytest.raises(headscan.InputError, match="--force"):
        report.save(saved)
    report.save(saved, force=True)


def test_ablation_runs_as_on_the_command_line(tmp_path, corpus_file):
    flags = ["--ablation", "--ablation-sequences", "4", "--max-sequences", "12", "--parser", "none"]
    run_cli(DEMO, corpus_file, "-o", tmp_path / "cli", "-q", *flags)
    report = headscan.scan(DEMO, corpus_file, ablation=True, ablation_sequences=4, max_sequences=12, parser="none",
                           progress=False)
    assert without_run(report.json) == without_run(load_json(tmp_path / "cli" / "heads.json"))
    assert report.json["ablation"]["sequences"] == 4 and report.findings
    with pytest.raises(TypeError, match="takes True or False"):
        headscan.scan(DEMO, corpus_file, ablation="yes")


def test_a_live_traced_module_equals_its_saved_archive(tmp_path, demo_tokenizer, corpus_file):
    live = traced_toy()
    metadata = {"name": "toy", "causal": True, "max_length": 48}
    archive = tmp_path / "toy.pt"
    torch.jit.save(live, str(archive), _extra_files={"tokenizer.json": demo_tokenizer.read_text(),
                                                     "headscan.json": json.dumps(metadata)})
    from_path = headscan.scan(archive, corpus_file, parser="none", progress=False)
    from_live = headscan.scan(live, corpus_file, tokenizer=demo_tokenizer, metadata=metadata, parser="none",
                              progress=False)
    assert from_live.json["model"]["path"] == "<Toy>"
    assert from_live.json["model"]["tokenizer"].endswith(f"({demo_tokenizer})")
    cli = tmp_path / "cli"
    run_cli(archive, corpus_file, "--parser", "none", "-o", cli, "-q")
    from_cli = load_json(cli / "heads.json")
    # Equal but for where the model and its tokenizer came from.
    for document in (from_path.json, from_live.json, from_cli):
        document["model"].pop("path"), document["model"].pop("tokenizer")
    assert without_run(from_live.json) == without_run(from_path.json)
    assert without_run(from_live.json) == without_run(from_cli)
    # The planted heads, by construction.
    layer0, layer1 = heads_of(from_live.json)
    assert "previous-token" in layer0["labels"] and layer0["scores"]["previous_token"] > 0.99
    assert "first-token" in layer1["labels"] and layer1["scores"]["first_token"] > 0.99
    # A tokenizers.Tokenizer object goes into the archive as its tokenizer.json.
    tokenizers = pytest.importorskip("tokenizers")
    from_object = headscan.scan(live, corpus_file, tokenizer=tokenizers.Tokenizer.from_file(str(demo_tokenizer)),
                                metadata=metadata, parser="none", progress=False)
    assert from_object.json["model"]["tokenizer"] == "WordLevel, 62 tokens (<Toy>:tokenizer.json)"
    assert heads_of(from_object.json) == heads_of(from_live.json)


def test_a_list_of_strings_is_a_corpus(corpus_lines, corpus_file):
    from_list = headscan.scan(DEMO, corpus_lines, parser="none", progress=False)
    from_file = headscan.scan(DEMO, corpus_file, parser="none", progress=False)
    assert heads_of(from_list.json) == heads_of(from_file.json)
    assert from_list.json["corpus"]["path"] == "<list>"
    assert from_list.json["corpus"]["documents"] == len(corpus_lines)
    # A generator too, and documents may hold line breaks (each string is one document).
    from_generator = headscan.scan(DEMO, (line for line in corpus_lines), parser="none", progress=False)
    assert heads_of(from_generator.json) == heads_of(from_file.json)
    two_lines = headscan.scan(DEMO, [corpus_lines[0] + "\n" + corpus_lines[1]], parser="none", progress=False)
    assert two_lines.json["corpus"]["documents"] == 1
    with pytest.raises(headscan.InputError, match="corpus item 1 is a int"):
        headscan.scan(DEMO, ["a line", 3], progress=False)


def test_the_dataframe_is_heads_csv(tmp_path, corpus_file):
    pandas = pytest.importorskip("pandas")
    report = headscan.scan(DEMO, corpus_file, parser="none", progress=False)
    saved = report.save(tmp_path / "report")
    frame = report.heads
    pandas.testing.assert_frame_equal(frame, pandas.read_csv(saved / "heads.csv"))
    assert list(frame.columns[:5]) == ["layer", "head", "kv_group", "primary", "labels"]
    assert frame.loc[1, "primary"] == report.json["heads"][1]["primary"]
    # Without pandas: a list of dicts, numbers as numbers.
    script = textwrap.dedent(f"""
        import sys, json
        sys.modules["pandas"] = None
        import headscan
        rows = headscan.scan({str(DEMO)!r}, {str(corpus_file)!r}, parser="none", progress=False).heads
        print(json.dumps(rows))
    """)
    rows = json.loads(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                                     check=True).stdout)
    assert [list(row) for row in rows] == [list(frame.columns)] * len(frame)
    assert rows[1]["layer"] == 1 and rows[1]["induction"] == pytest.approx(frame.loc[1, "induction"])


def test_errors_are_the_clis(tmp_path, corpus_file):
    cases = [
        ({"batch_size": 0}, ["--batch-size", "0"]),
        ({"dtype": "float8"}, ["--dtype", "float8"]),
        ({"thresholds": {"no_such_score": 0.5}}, ["--threshold", "no_such_score=0.5"]),
    ]
    for options, flags in cases:
        with pytest.raises(headscan.InputError) as raised:
            headscan.scan(DEMO, corpus_file, progress=False, **options)
        cli = run_cli(DEMO, corpus_file, "-o", tmp_path / "never", *flags, check=False)
        assert cli.returncode == 2
        assert str(raised.value) in cli.stderr, (str(raised.value), cli.stderr)
        assert not (tmp_path / "never").exists()
    with pytest.raises(headscan.InputError, match="found nothing at this path"):
        headscan.scan(DEMO, tmp_path / "missing.txt", progress=False)
    with pytest.raises(TypeError, match="unexpected keyword argument 'output'"):
        headscan.scan(DEMO, corpus_file, output="somewhere")
    with pytest.raises(headscan.InputError, match="model is a int"):
        headscan.scan(3, corpus_file, progress=False)
    assert issubclass(headscan.InputError, ValueError) and issubclass(headscan.RunError, RuntimeError)
    # A failure while running (exit 1 of the CLI) is RunError: here the strings cannot be written to
    # a temporary file.
    script = textwrap.dedent(f"""
        import os
        os.environ["TMPDIR"] = "/nonexistent-headscan-tmp"
        import headscan
        try:
            headscan.scan({str(DEMO)!r}, ["one line"], progress=False)
        except headscan.RunError as e:
            print("RunError:", e)
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout.startswith("RunError: cannot create a temporary file"), result.stdout + result.stderr


def test_ctrl_c_stops_a_run(tmp_path, corpus_lines):
    script = textwrap.dedent(f"""
        import signal, sys, time
        import headscan
        # Python leaves SIGINT ignored when it started so (a job put in the background by a
        # shell without job control); a terminal or a notebook has its handler.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        def progress(done, total, tokens, unit, final):
            if not getattr(progress, "said", False):
                progress.said = True
                print("started", flush=True)
        corpus = {corpus_lines!r} * 400
        start = time.monotonic()
        try:
            headscan.scan({str(DEMO)!r}, corpus, parser="none", progress=progress, batch_size=1)
        except KeyboardInterrupt:
            print("interrupted after", time.monotonic() - start, flush=True)
            sys.exit(0)
        print("finished", flush=True)
        sys.exit(1)
    """)
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "started"
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, out + err
    assert out.startswith("interrupted after"), out + err


def test_the_gil_is_free_while_the_model_runs(corpus_lines):
    import threading
    import time
    counted = 0
    stop = threading.Event()

    def count():
        nonlocal counted
        while not stop.is_set():
            counted += 1

    thread = threading.Thread(target=count)
    thread.start()
    try:
        updates = []
        headscan.scan(DEMO, corpus_lines * 20, parser="none", batch_size=1,
                      progress=lambda *update: updates.append((time.monotonic(), counted)))
    finally:
        stop.set()
        thread.join()
    # Python code ran in the spans of more than 20 ms between progress calls, while the run held no
    # GIL. (Calls closer together may follow each other before the other thread wins the GIL back.)
    gains = []
    start, earlier = updates[0]
    for end, later in updates[1:]:
        if end - start > 0.02:
            gains.append(later - earlier)
            start, earlier = end, later
    assert len(gains) >= 10
    assert sum(1 for gain in gains if gain > 0) > len(gains) // 2


def test_progress_reaches_a_callback(corpus_file):
    updates = []
    headscan.scan(DEMO, corpus_file, parser="none", progress=lambda *update: updates.append(update))
    assert updates and updates[-1][4] is True
    # Each phase in turn, each ending with its final update: the corpus pass, then the probes.
    units = [update[3] for update in updates]
    assert units[0] == "bytes" and [unit for i, unit in enumerate(units) if i == 0 or unit != units[i - 1]] == [
        "bytes", "probe tokens", "needle tokens"], sorted(set(units))
    finals = [update for update in updates if update[4]]
    assert [update[3] for update in finals] == ["bytes", "probe tokens", "needle tokens"], finals
    done, total, tokens, unit, _ = finals[0]
    assert unit == "bytes" and done == total == corpus_file.stat().st_size and tokens > 0
    for done, total, tokens, unit, _ in finals[1:]:  # the needle plan may stop before its most
        assert done == total and 0 < tokens <= total, (unit, done, total, tokens)


def test_compare_takes_reports_and_directories(tmp_path, corpus_file):
    first = headscan.scan(ROOT / "data/demo_checkpoints/step-00000.pt", corpus_file, parser="none", progress=False)
    last = headscan.scan(ROOT / "data/demo_checkpoints/step-08000.pt", corpus_file, parser="none", progress=False)
    in_memory = headscan.compare([first, last])
    assert [run["step"] for run in in_memory.json["runs"]] == [0, 8000]
    directories = [first.save(tmp_path / "a"), last.save(tmp_path / "b")]
    from_disk = headscan.compare(directories)
    for comparison in (in_memory, from_disk):
        for run in comparison.json["runs"]:
            run.pop("path"), run.pop("name")
    assert in_memory.json == from_disk.json
    out = in_memory.save(tmp_path / "compare")
    assert (out / "compare.json").is_file() and (out / "index.html").is_file()
    run_cli("compare", *directories, "-o", tmp_path / "cli-compare", "-q")
    assert load_json(tmp_path / "cli-compare" / "compare.json")["heads"] == load_json(out / "compare.json")["heads"]
    assert "<b>headscan compare</b>" in in_memory._repr_html_()


def test_the_report_shows_its_head_map_inline(corpus_file):
    report = headscan.scan(DEMO, corpus_file, parser="none", progress=False)
    page = report._repr_html_()
    assert "data:image/png;base64,iVBORw0KGgo" in page  # a PNG's signature, base64
    assert "2 layers × 1 heads" in page


@pytest.fixture
def volume(tmp_path):
    """An empty directory with a 384 KiB tmpfs mounted on it, as a container's volume (root only)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mounted = tmp_path / "volume"
    mounted.mkdir()
    mount = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=384k", "tmpfs", str(mounted)],
                           capture_output=True, text=True)
    if mount.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mount.stderr.strip()}")
    try:
        yield mounted
    finally:
        subprocess.run(["umount", str(mounted)], check=False)


def test_save_into_a_mount_point_and_onto_a_full_disk(volume, corpus_file):
    report = headscan.scan(DEMO, corpus_file, parser="none", max_sequences=4, progress=False)
    # An empty mount point takes the report (a rename cannot replace it), with nothing left beside.
    assert report.save(volume, html=False, plots=False) == volume
    assert sorted(p.name for p in volume.iterdir()) == ["heads.csv", "heads.json", "idf.txt", "kv_plan"]
    before = {p.relative_to(volume): p.read_bytes() for p in volume.rglob("*") if p.is_file()}
    # The tmpfs shrunk to what it holds: the new report cannot be written, the earlier one stays.
    used = os.statvfs(volume)
    size = (used.f_blocks - used.f_bfree) * used.f_frsize
    subprocess.run(["mount", "-o", f"remount,size={size}", str(volume)], check=True)
    with pytest.raises(headscan.RunError, match=r"volume/\w+\.\w+: cannot write \(No space left on device\)"):
        report.save(volume, force=True, html=False, plots=False)
    assert {p.relative_to(volume): p.read_bytes() for p in volume.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in volume.iterdir()) == ["heads.csv", "heads.json", "idf.txt", "kv_plan"]
