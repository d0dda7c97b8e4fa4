"""What `headscan export` and headscan.export() run and refuse (issue 41, items 1, 4 and 5):

- nothing of the working directory is imported: not by the command's launcher (the C++ binary's
  `headscan export`), `python -m headscan export` or the console script;
- headscan.json is checked as the runner reads it (the same documents as tests/test_model_metadata.cpp),
  max_length capped at what a run reads, checked_length written;
- export's own failures are exit 2 or 1 with one line: bad files of the model directory, OUT a
  directory, another file or an unwritable folder (before anything is loaded), SIGTERM, a full disk;
  a staging folder left by a killed export is removed by the next one.

Run by pytest (tests/python/run.sh with the wheel, or on the source tree's exporter:
PYTHONPATH=analyzer/python python -m pytest tests/python/test_export_safety.py); the tests that need
headscan's C++ core or root are skipped without them.
"""

import json
import os
import signal
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from test_export import Hybrid, SelfAttention, exported_llama, export_toy, headscan, raises, tiny_llama

if headscan is not None:
    from headscan._export import ExportError, ExportInputError, command, exporter, headscan_json, metadata, output, pt2
else:
    from _export import ExportError, ExportInputError, command, exporter, headscan_json, metadata, output, pt2

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "tests" / "fixtures" / "headscan_json_cases.json"
# The modules Python's runpy imports for `python -m` after putting the working directory on
# sys.path, before any of headscan's code runs (`python -P -m` or the headscan command avoid them).
RUNPY_IMPORTS = {"collections", "contextlib", "functools", "importlib", "itertools", "keyword", "operator", "reprlib",
                 "types", "warnings", "__future__"}


def export_package_parent():
    """The folder to put on PYTHONPATH for `python -c "import headscan._export"`: the imported
    exporter's package's parent (the wheel's site-packages, build/python or analyzer/python/headscan)."""
    return str(Path(os.path.abspath(exporter.__file__)).parents[1 if headscan is None else 2])


def python_path(first):
    """PYTHONPATH with `first` in front of the inherited one, without empty entries: Python reads an
    empty entry as the working directory, which would put it on sys.path from the interpreter's start
    (its encodings module among what a model directory could shadow)."""
    return os.pathsep.join(entry for entry in [first, *os.environ.get("PYTHONPATH", "").split(os.pathsep)] if entry)


def one_line(stderr):
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in stderr, f"expected one line, got:\n{stderr}"
    return lines[0]


# 1. Nothing of the working directory runs.

def shadowing_folder(folder, marker, left_out=()):
    """A model directory whose .py files stand for every module of the standard library (and torch,
    transformers) but `left_out`: each, if imported, writes its name to `marker`."""
    folder.mkdir()
    for name in sorted(set(sys.stdlib_module_names) - set(left_out)) + ["torch", "transformers", "tokenizers"]:
        (folder / f"{name}.py").write_text(f"open({str(marker)!r}, 'a').write({name!r} + '\\n')\n")
    return folder


def launchers():
    """(name, command) of each way headscan export starts here: the binary's launcher, python -m
    headscan, the wheel's console script; none without headscan's C++ core."""
    if headscan is None:
        return []
    package = Path(os.path.abspath(headscan.__file__)).parent  # a build's links not followed
    found = [("python -m headscan", [sys.executable, "-m", "headscan"])]
    for binary in (package / "bin" / "headscan", package.parent.parent / "headscan"):
        if binary.is_file() and os.access(binary, os.X_OK):
            found.append(("the binary's launcher", [str(binary)]))
            break
    script = Path(sys.executable).parent / "headscan"
    if script.is_file() and script.read_bytes().startswith(b"#!"):
        found.append(("the console script", [str(script)]))
    return found


def test_nothing_of_the_working_directory_is_imported(tmp_path):
    found = launchers()
    if not found:
        pytest.skip("needs headscan's C++ core (the wheel, or build/python on PYTHONPATH)")
    marker = tmp_path / "imported.txt"
    environment = dict(os.environ, HEADSCAN_PYTHON=sys.executable)
    environment["PYTHONPATH"] = python_path(str(Path(os.path.abspath(headscan.__file__)).parents[1]))
    for number, (name, start) in enumerate(found):
        # python -m itself imports runpy's modules from there before any of headscan's code runs.
        model_dir = shadowing_folder(tmp_path / f"model{number}", marker, RUNPY_IMPORTS if "-m" in start else ())
        result = subprocess.run([*start, "export", ".", "../out.pt2"], cwd=model_dir, capture_output=True, text=True,
                                env=environment, timeout=300)
        imported = marker.read_text().split() if marker.exists() else []
        assert not imported, f"{name} imported {', '.join(imported)} from the working directory"
        assert result.returncode == 2 and "config.json" in one_line(result.stderr), (name, result.stderr)


# 4. headscan.json as the runner reads it.

def case_texts():
    for case in json.loads(CASES.read_text(encoding="utf-8"))["cases"]:
        if "text" in case:
            text = case["text"]
        elif "nest" in case:
            text = '{"x": ' + "[" * (case["nest"] - 1) + "]" * (case["nest"] - 1) + "}"
        else:
            text = '{"x": "' + "a" * case["pad"] + '"}'
        yield text, case


def test_the_checker_agrees_with_the_runner_on_the_shared_cases():
    """tests/test_model_metadata.cpp runs parse_model_metadata on the same cases."""
    count = 0
    for text, case in case_texts():
        try:
            headscan_json.check_text(text)
            message = ""
        except headscan_json.MetadataError as e:
            message = str(e)
        assert (message == "") == case["accepted"], f"{text[:80]!r}: {message or 'accepted'}"
        assert case.get("field", "") in message, f"{text[:80]!r}: {message}"
        count += 1
    assert count > 50


def test_max_length_is_capped_at_what_a_run_reads(tmp_path):
    import argparse
    import transformers

    scout = transformers.LlamaConfig(max_position_embeddings=10485760)
    args = argparse.Namespace(max_length=None, max_length_cap=None)
    length, source = metadata.choose_max_length(args, scout, str(tmp_path), "sdpa")
    assert length == headscan_json.MAX_LENGTH == 1048576 and "below the model's 10,485,760 positions" in source
    with pytest.raises(SystemExit) as exit_:
        command.parse_args([str(tmp_path), str(tmp_path / "m.pt2"), "--max-length", "1048577"])
    assert exit_.value.code == 2
    assert command.parse_args(["m", "m.pt2", "--max-length", "1048576"]).max_length == 1048576


def test_export_refuses_metadata_no_run_reads_and_writes_checked_length():
    model = Hybrid([SelfAttention()]).eval()
    raises(ExportInputError, "causal must be true or false", exporter.export_model, model, None, max_length=64,
           takes_mask=False, causal="maybe")
    raises(ExportInputError, "max_length must be an integer from 2 to 1048576", exporter.export_model, model, None,
           max_length=10**12, takes_mask=False)
    raises(ExportInputError, "name must be a string", exporter.export_model, model, None, max_length=64,
           takes_mask=False, metadata={"name": 5})
    _, exported = exported_llama("eager")
    assert exported.metadata["checked_length"] == max(exported.exact) == 256  # 4 x the 64-token chunk
    headscan_json.check_text(exporter.extra_files(exported, None)["headscan.json"])


def test_headscan_export_refuses_metadata_no_run_reads(tmp_path):
    if headscan is None:
        pytest.skip("headscan.export() needs headscan's C++ core")
    model = tiny_llama("sdpa")
    raises(headscan.InputError, "causal must be true or false", headscan.export, model, metadata={"causal": "maybe"},
           max_length=64)
    raises(headscan.InputError, "from 2 to 1048576", headscan.export, model, metadata={"max_length": 10**12})
    (tmp_path / "dir.pt2").mkdir()
    raises(headscan.InputError, "is a directory", headscan.export, model, tmp_path / "dir.pt2", max_length=64)


# 5. Export's own failures: exit 2 or 1 with one line.

def test_bad_files_of_the_model_directory_are_input_errors(tmp_path):
    config = tmp_path / "tokenizer_config.json"
    for text, said in (("{not json", "is not JSON"), ("[1, 2]", "holds a JSON list"), (b"\xff\xfe{}", "not UTF-8")):
        config.write_bytes(text if isinstance(text, bytes) else text.encode())
        raises(ExportInputError, said, metadata.read_json, str(config))
    tokenizer = tmp_path / "tokenizer.json"
    tokenizer.write_bytes(b'{"model": "\xff"}')
    raises(ExportInputError, "is not UTF-8 text", metadata.load_tokenizer_json, str(tmp_path), None, False)
    tokenizer.write_text('{"model": 1}')
    raises(ExportInputError, "is not a tokenizer.json", metadata.load_tokenizer_json, str(tmp_path), None, False)


def run_command(*arguments, cwd=None):
    """`headscan export ARGUMENTS` of this exporter, in a new process: (exit status, stderr)."""
    code = "import sys\nfrom headscan._export.command import main\nsys.exit(main(sys.argv[1:]))\n"
    if headscan is None:
        code = code.replace("headscan._export", "_export")
    environment = dict(os.environ, PYTHONPATH=python_path(export_package_parent()))
    result = subprocess.run([sys.executable, "-c", code, *map(str, arguments)], capture_output=True, text=True,
                            env=environment, cwd=cwd, timeout=300)
    return result.returncode, result.stderr


def test_a_model_directory_with_a_broken_tokenizer_config_is_exit_2(tmp_path):
    model_dir = tmp_path / "model"
    tiny_llama("eager").save_pretrained(model_dir)
    (model_dir / "tokenizer.json").write_bytes(b"\x80 not text")
    code, stderr = run_command(model_dir, tmp_path / "m.pt2")
    assert code == 2 and "is not UTF-8 text" in one_line(stderr)
    from tokenizers import Tokenizer, models

    Tokenizer(models.WordLevel({"<unk>": 0, "a": 1}, unk_token="<unk>")).save(str(model_dir / "tokenizer.json"))
    (model_dir / "tokenizer_config.json").write_text("[]")
    code, stderr = run_command(model_dir, tmp_path / "m.pt2")
    assert code == 2 and "holds a JSON list" in one_line(stderr)


def test_out_is_checked_before_anything_is_loaded(tmp_path):
    missing = tmp_path / "no-model"  # the model directory is read after OUT is checked
    (tmp_path / "dir.pt2").mkdir()
    raises(ExportInputError, "is a directory", output.Output, str(tmp_path / "dir.pt2"), False)
    code, stderr = run_command(missing, tmp_path / "dir.pt2")
    assert code == 2 and "dir.pt2: is a directory" in one_line(stderr)
    mine = tmp_path / "thesis.pt2"
    mine.write_text("my own file")
    for force in ([], ["--force"]):
        code, stderr = run_command(missing, mine, *force)
        assert code == 2 and ("already exists" if not force else "never replaced") in one_line(stderr)
    assert mine.read_text() == "my own file"
    # An earlier archive of an export: refused without --force, replaced with it.
    _, exported = exported_llama("eager")
    earlier = tmp_path / "earlier.pt2"
    pt2.package(str(earlier), exported.program, exporter.extra_files(exported, None))
    raises(ExportInputError, "already exists", output.Output, str(earlier), False)
    with output.Output(str(earlier), True) as out:
        out.write(lambda temporary: Path(temporary).write_bytes(b"new"))
    assert earlier.read_bytes() == b"new" and not list(tmp_path.glob(".headscan-export.*"))
    assert not list(tmp_path.glob(".headscan-export.*"))


def read_only_folder(folder):
    """A folder this process cannot write: a read-only tmpfs as root, else one without write
    permission; None where neither holds."""
    folder.mkdir()
    if os.geteuid() == 0:
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(folder)],
                          capture_output=True).returncode != 0:
            return None
        return folder
    folder.chmod(0o500)
    return folder


def test_a_folder_that_cannot_be_written_is_exit_2_up_front(tmp_path):
    folder = read_only_folder(tmp_path / "read-only")
    if folder is None:
        pytest.skip("no read-only folder here (root without mount)")
    try:
        code, stderr = run_command(tmp_path / "no-model", folder / "m.pt2")
        assert code == 2 and "cannot write in" in one_line(stderr)
    finally:
        if os.geteuid() == 0:
            subprocess.run(["umount", str(folder)], check=False)
        folder.chmod(0o700)


def test_sigterm_while_packaging_removes_the_staging_folder(tmp_path):
    """SIGTERM arrives while the archive is written: exit 143, one line, no staging folder."""
    code = textwrap.dedent(f"""
        import os, signal, sys, time
        from {'headscan.' if headscan is not None else ''}_export import command, output

        def export(args):
            with output.Output(args.output, False) as out:
                def write(temporary):
                    open(temporary, "wb").write(b"partial")
                    os.kill(os.getpid(), signal.SIGTERM)
                    time.sleep(30)
                out.write(write)

        command.export = export
        sys.exit(command.main([{str(tmp_path)!r}, {str(tmp_path / "m.pt2")!r}]))
        """)
    environment = dict(os.environ, PYTHONPATH=python_path(export_package_parent()))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment, timeout=120)
    assert result.returncode == 143 and "terminated" in one_line(result.stderr), (result.returncode, result.stderr)
    assert not list(tmp_path.glob(".headscan-export.*")) and not (tmp_path / "m.pt2").exists()


def test_staging_folders_of_dead_exports_are_removed(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    owner = output.owner_record(dead.pid)
    dead.wait()
    if owner is None:
        pytest.skip("this system does not say when a process started (/proc)")
    folders = {name: tmp_path / f".headscan-export.{name}" for name in ("dead", "alive", "unknown", "other-host")}
    for folder in folders.values():
        folder.mkdir()
    (folders["dead"] / output.OWNER_FILE).write_text(json.dumps(owner))
    (folders["alive"] / output.OWNER_FILE).write_text(json.dumps(output.owner_record(os.getpid())))
    (folders["other-host"] / output.OWNER_FILE).write_text(json.dumps({**owner, "host": "elsewhere"}))
    with output.Output(str(tmp_path / "m.pt2"), False) as out:
        assert (Path(out.staging) / output.OWNER_FILE).exists()
        left = sorted(path.name for path in tmp_path.glob(".headscan-export.*") if str(path) != out.staging)
    assert left == [".headscan-export.alive", ".headscan-export.other-host", ".headscan-export.unknown"]


def test_a_full_disk_is_exit_1_with_one_line(tmp_path):
    """On a tmpfs filled to its last byte: exit 1 naming OUT and the disk's reason, no SIGABRT from
    torch's zip writer, nothing left on the disk."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(disk)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        code = textwrap.dedent(f"""
            import sys
            sys.path.insert(0, {str(Path(__file__).parent)!r})
            from test_export import exported_llama
            from {'headscan.' if headscan is not None else ''}_export import command, exporter, output, pt2

            _, exported = exported_llama("eager")
            def export(args):
                with output.Output(args.output, False) as out:
                    with open({str(disk / "fill")!r}, "wb", buffering=0) as fill:  # the disk full to its last byte
                        try:
                            while fill.write(b"x" * 512):
                                pass
                        except OSError:
                            pass
                    out.write(lambda temporary: pt2.package(temporary, exported.program,
                                                            exporter.extra_files(exported, None)))

            command.export = export
            sys.exit(command.main(["model", {str(disk / "m.pt2")!r}]))
            """)
        environment = dict(os.environ, PYTHONWARNINGS="ignore",
                           PYTHONPATH=python_path(export_package_parent()))
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment,
                                timeout=300)
        line = one_line(result.stderr)
        assert result.returncode == 1 and "m.pt2: cannot write (No space left on device)" in line, \
            (result.returncode, result.stderr[-3000:])
        assert sorted(os.listdir(disk)) == ["fill"]
    finally:
        subprocess.run(["umount", str(disk)], check=False)
