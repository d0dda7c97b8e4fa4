"""What scan() and compare() are given: an iterable of strings pulled only as far as the run reads,
Ctrl-C while it is pulled, text UTF-8 cannot encode, a model of a kind scan() does not take, and
compare()'s steps and runs checked as ``headscan compare`` checks them. Run by tests/python/run.sh
with the installed wheel."""

import itertools
import os
import signal
import subprocess
import sys
import textwrap

import pytest

import headscan
from conftest import DEMO, ROOT, run_cli, without_run

CHECKPOINTS = ROOT / "data" / "demo_checkpoints"


def test_a_generator_is_pulled_only_as_far_as_max_sequences_reads(tmp_path, corpus_lines):
    pulled = 0

    def documents():  # 100,000 of them: spooling them all first would take them all
        nonlocal pulled
        for line in itertools.islice(itertools.cycle(corpus_lines), 100_000):
            pulled += 1
            yield line

    report = headscan.scan(DEMO, documents(), max_sequences=5, parser="none", progress=False)
    assert report.json["corpus"]["sequences"] == 5
    # The idf and corpus passes read 5 documents; the needle probes' haystacks read on from the
    # corpus's start as far as they need, as from a file.
    assert pulled < 200, pulled
    many = tmp_path / "many.txt"
    many.write_text("\n".join(corpus_lines * 50) + "\n", encoding="utf-8")
    from_file = headscan.scan(DEMO, many, max_sequences=5, parser="none", progress=False)
    assert report.json["heads"] == from_file.json["heads"]
    assert report.json["retrieval"] == from_file.json["retrieval"]
    # Without max_sequences, progress counts the sequences of a corpus of unknown size.
    updates = []
    headscan.scan(DEMO, iter(corpus_lines), parser="none", progress=lambda *update: updates.append(update))
    corpus = [update for update in updates if update[3] == "sequences"]
    done, total, _, unit, final = corpus[-1]
    assert (done, total, unit, final) == (len(corpus_lines), 0, "sequences", True)


def test_what_the_iterable_raises_is_raised(corpus_lines):
    def failing():
        yield corpus_lines[0]
        raise LookupError("the dataset went away")

    with pytest.raises(LookupError, match="the dataset went away"):
        headscan.scan(DEMO, failing(), parser="none", progress=False)
    # Even when the documents before it give no token: not "the corpus is empty".
    with pytest.raises(headscan.InputError, match="corpus item 1 is a int"):
        headscan.scan(DEMO, ["", 3], progress=False)


def test_ctrl_c_while_the_iterable_is_pulled_leaves_no_file(tmp_path, corpus_lines):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    script = textwrap.dedent(f"""
        import itertools, os, signal, sys, time
        import headscan
        signal.signal(signal.SIGINT, signal.default_int_handler)
        def documents():
            for index, line in enumerate(itertools.cycle({corpus_lines!r})):
                if index == 1000:
                    # The file the documents go to is not in TMPDIR, even while the run goes on.
                    print("pulling", os.listdir(os.environ["TMPDIR"]), flush=True)
                yield line
        start = time.monotonic()
        try:
            headscan.scan({str(DEMO)!r}, documents(), parser="none", progress=False)
        except KeyboardInterrupt:
            print("interrupted after", time.monotonic() - start, flush=True)
            sys.exit(0)
        sys.exit(1)
    """)
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "TMPDIR": str(scratch)})
    assert child.stdout.readline().strip() == "pulling []"
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, out + err
    assert out.startswith("interrupted after"), out + err
    assert float(out.split()[-1]) < 30
    assert list(scratch.iterdir()) == []


def test_text_utf8_cannot_encode_is_an_input_error_saying_where(tmp_path, corpus_file):
    lone = "caf\udce9"  # what errors="surrogateescape" makes of Latin-1 "café"
    cases = [
        (lambda: headscan.scan(DEMO, ["fine", lone], progress=False), r"^corpus item 1 holds U\+DCE9 at index 3"),
        (lambda: headscan.scan(DEMO, str(tmp_path / lone), progress=False), r"^corpus holds U\+DCE9 at index \d+"),
        (lambda: headscan.scan(str(tmp_path / lone), corpus_file, progress=False), r"^model holds U\+DCE9"),
        (lambda: headscan.scan(DEMO, corpus_file, tokenizer=lone, progress=False), r"^tokenizer= holds U\+DCE9"),
        (lambda: headscan.scan(DEMO, corpus_file, thresholds={lone: 0.5}, progress=False),
         r"^a key of thresholds= holds U\+DCE9"),
        (lambda: headscan.scan(DEMO, corpus_file, metadata={"name": lone}, progress=False),
         r"^metadata\['name'\] holds U\+DCE9"),
        (lambda: headscan.compare([tmp_path / lone]), r"^run 0 holds U\+DCE9"),
    ]
    for call, says in cases:
        with pytest.raises(headscan.InputError, match=says) as raised:
            call()
        assert "a lone surrogate, which UTF-8 cannot encode" in str(raised.value)
    report = headscan.scan(DEMO, corpus_file, parser="none", progress=False)
    with pytest.raises(headscan.InputError, match=r"^directory holds U\+DCE9 .* give a path that is valid UTF-8"):
        report.save(tmp_path / lone)
    assert list(tmp_path.glob("caf*")) == []


@pytest.mark.parametrize("model", [3, b"model.pt2", None, ["model.pt2"]], ids=repr)
def test_a_model_scan_cannot_take_is_refused_naming_all_it_takes(model):
    """The message names every kind of model scan() takes: .pt2 and TorchScript archives, any
    torch.nn.Module and a ScriptModule; the corpus is not pulled."""
    def documents():
        raise AssertionError("the corpus was pulled")
        yield

    kind = type(model).__name__
    with pytest.raises(headscan.InputError, match=f"^model is a {kind}: give the path of an archive") as raised:
        headscan.scan(model, documents(), progress=False)
    for named in ("exported program .pt2", "TorchScript .pt", "torch.nn.Module", "torch.jit.ScriptModule"):
        assert named in str(raised.value), (named, str(raised.value))


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory, corpus_file):
    reports = [headscan.scan(CHECKPOINTS / name, corpus_file, parser="none", progress=False)
               for name in ("step-00000.pt", "step-08000.pt")]
    out = tmp_path_factory.mktemp("checkpoints")
    return reports, [report.save(out / str(index)) for index, report in enumerate(reports)]


def test_compare_steps_get_the_command_lines_checks(tmp_path, checkpoints):
    reports, directories = checkpoints
    cases = [([0], "0"), ([-1, 5], "-1,5"), ([2 ** 60, 0], f"{2 ** 60},0"), ([0.5, 1], "0.5,1"),
             ([True, 1], "True,1"), ([], "")]
    for steps, flag in cases:
        with pytest.raises(headscan.InputError) as raised:
            headscan.compare(reports, steps=steps)
        cli = run_cli("compare", *directories, "--steps", flag, "-o", tmp_path / "never", check=False)
        assert cli.returncode == 2, cli.stderr
        assert f"headscan: error: {raised.value}\n" in cli.stderr, (str(raised.value), cli.stderr)
        assert not (tmp_path / "never").exists()
    ordered = headscan.compare(reports, steps=[9, 3])
    assert [run["step"] for run in ordered.json["runs"]] == [3, 9]
    assert without_run(headscan.compare(reports, steps="9,3").json) == without_run(ordered.json)


def test_a_run_given_twice_is_refused_as_by_the_command_line(tmp_path, checkpoints):
    reports, directories = checkpoints
    cli = run_cli("compare", directories[0], directories[0] / "heads.json", "-o", tmp_path / "never", check=False)
    assert cli.returncode == 2 and "this run is given twice" in cli.stderr
    name = reports[0].json["model"]["name"]
    for runs, says in [([reports[0], reports[1], reports[0]], f"{name}: this run is given twice (also as {name})"),
                       ([reports[0], directories[0]], f"{directories[0]}: this run is given twice (also as {name})"),
                       ([directories[0] / "heads.json", reports[0]],
                        f"{name}: this run is given twice (also as {directories[0] / 'heads.json'})"),
                       ([directories[0], directories[0]], "this run is given twice")]:
        with pytest.raises(headscan.InputError, match="given twice") as raised:
            headscan.compare(runs)
        assert says in str(raised.value)
    # Two reports of one model are two runs.
    assert headscan.compare([reports[0], reports[1]]).summary["runs"] == 2


def test_messages_reach_the_terminal_with_control_characters_escaped(tmp_path):
    # A file name with an ANSI colour and a bell: the exception says it as the command line does.
    corpus = tmp_path / "c\x1b[31m\x07.txt"
    with pytest.raises(headscan.InputError) as raised:
        headscan.scan(DEMO, corpus, progress=False)
    assert "c\\x1B[31m\\x07.txt" in str(raised.value)
    assert "\x1b" not in str(raised.value) and "\x07" not in str(raised.value)


def test_probes_is_the_command_lines_option(corpus_file):
    # probes={"kind": value} is --probes kind=value,…: 3 induction probes, no needle probes.
    report = headscan.scan(DEMO, corpus_file, probes={"induction": 3, "needles": "none"}, parser="none",
                           progress=False)
    assert report.json["probes"]["count"] == 3, report.json["probes"]
    assert report.json["retrieval"]["probes"] == 0 and "--probes" in report.json["retrieval"]["note"]
    assert "needles" not in report.json["run"]["phases"] and "probes" in report.json["run"]["phases"]
    none = headscan.scan(DEMO, corpus_file, probes="none", parser="none", progress=False)
    assert none.json["probes"]["count"] == 0 and none.json["model"]["repeat_loss"] is None
    assert all(head["scores"]["induction"] is None for head in none.json["heads"])
    with pytest.raises(headscan.InputError, match=r"--probes induction=0: expected default, none, a number N"):
        headscan.scan(DEMO, corpus_file, probes={"induction": 0}, progress=False)
