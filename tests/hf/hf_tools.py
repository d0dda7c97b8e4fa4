"""What both Hugging Face checks (check_export_hf.py, check_export_pt2.py) do with the programs
they test: run a command, read a file inside an archive."""

import subprocess
import zipfile


def run(command, what, **kwargs):
    """The command's standard output; an AssertionError with its output's tail when it fails."""
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        raise AssertionError(f"{what} failed (exit {result.returncode}): {' '.join(command)}\n"
                             f"{result.stdout[-3000:]}{result.stderr[-3000:]}")
    return result.stdout


def archive_file(archive, name):
    """The text of extra/NAME inside a .pt or .pt2 archive."""
    with zipfile.ZipFile(archive) as z:
        for entry in z.namelist():
            if entry.endswith("/extra/" + name):
                return z.read(entry).decode("utf-8")
    raise AssertionError(f"{archive} has no extra file {name}")
