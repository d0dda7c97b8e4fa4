"""OUT.pt2 of `headscan export` and headscan.export(): checked before the export runs, written in a
staging folder beside it and renamed into place, so OUT is whole or as it was.

- OUT may be a new path or an earlier archive of headscan export (a .pt2 holding
  extra/headscan.json), which only --force replaces; a directory, a FIFO, a device, a dangling link
  or any other file is refused (exit 2) before the model is loaded. A link writes to its target.
- The staging folder, .headscan-export.XXXXXXXX/ in OUT's folder, is made before the export runs
  (an unwritable or read-only folder is exit 2 then, not after minutes of export) and holds
  owner.json: the host, boot and process that made it. Ctrl-C and SIGTERM remove it; a folder left
  by an export killed outright (SIGKILL, a crash) is removed by the next export into that folder
  once owner.json proves its process gone (same host and boot, no process of that pid and start
  time). Folders it cannot prove stale are left alone.
- A full disk while the archive is written is exit 1 naming OUT and the reason, the staging folder
  removed. torch's zip writer finishes the archive in its destructor, which after a failed write
  throws again and aborts the process (SIGABRT): the writer is finished here first, its error
  ignored, so that the destructor has nothing left to do.
"""

import contextlib
import errno
import json
import os
import shutil
import signal
import socket
import tempfile
import threading
import traceback
import zipfile

from . import ExportError, ExportInputError

STAGING_PREFIX = ".headscan-export."
OWNER_FILE = "owner.json"
# A write that failed on these is a failure while running (exit 1), not bad input.
RUNNING_OUT = {errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EFBIG}


class Terminated(BaseException):
    """SIGTERM, raised in the main thread as Ctrl-C raises KeyboardInterrupt, so that the export
    unwinds and removes what it staged."""


@contextlib.contextmanager
def sigterm_unwinds():
    """While it lasts, SIGTERM raises Terminated in the main thread (elsewhere, nothing changes)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum, frame):  # noqa: ARG001 - the signal module's signature
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def refuse(path, message, running=False):
    error = (ExportError if running else ExportInputError)(message)
    error.path = path
    return error


def os_reason(error):
    return error.strerror or str(error)


class Output:
    """OUT checked (the constructor) and staged (entering the `with`); write() puts the archive in
    place; leaving the `with` removes the staging folder, whatever happened."""

    def __init__(self, path, force):
        path = os.fspath(path)
        self.path = path
        self.target = path
        if os.path.islink(path):
            self.target = os.path.realpath(path)
            if not os.path.lexists(self.target):
                raise refuse(path, f"is a link to {self.target}, which does not exist; give a file path")
        if os.path.lexists(self.target):
            if os.path.isdir(self.target):
                raise refuse(path, "is a directory; give the archive's file name (ending in .pt2)")
            if not os.path.isfile(self.target):
                raise refuse(path, "is not a regular file (a FIFO, socket or device); give a file path")
            if not force:
                raise refuse(path, "already exists; --force replaces an earlier archive of headscan export "
                                   "(headscan.export() replaces one always)")
            if not is_export_archive(self.target):
                raise refuse(path, "exists and is not an archive of headscan export (a .pt2 with "
                                   "extra/headscan.json): it is never replaced, even with --force; remove it or "
                                   "choose another name")
        self.folder = os.path.dirname(os.path.abspath(self.target))
        self.staging = None

    def __enter__(self):
        try:
            os.makedirs(self.folder, exist_ok=True)
        except OSError as e:
            raise refuse(self.path, f"cannot create its folder {self.folder} ({os_reason(e)})",
                         e.errno in RUNNING_OUT) from None
        if not os.path.isdir(self.folder):
            raise refuse(self.path, f"its folder {self.folder} is not a directory")
        remove_stale_staging(self.folder)
        try:
            self.staging = tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=self.folder)
            owner = owner_record(os.getpid())
            with open(os.path.join(self.staging, OWNER_FILE), "w", encoding="utf-8") as f:
                json.dump(owner or {}, f)
        except OSError as e:
            self.discard()
            raise refuse(self.path, f"cannot write in {self.folder} ({os_reason(e)}); choose a folder you can "
                                    "write", e.errno in RUNNING_OUT) from None
        return self

    def __exit__(self, *exc_info):
        self.discard()

    def discard(self):
        if self.staging is not None:
            shutil.rmtree(self.staging, ignore_errors=True)
            self.staging = None

    def write(self, write_file):
        """Calls write_file(path) to write the archive at a path in the staging folder (named as OUT:
        the archive's inner folder is named after the file), then renames it to OUT."""
        temporary = os.path.join(self.staging, os.path.basename(self.target))
        try:
            write_file(temporary)
            with open(temporary, "rb") as f:
                os.fsync(f.fileno())  # a delayed write error (a full network disk) is found here
        except (OSError, RuntimeError) as e:
            finish_archive_writers(e.__traceback__)
            reason = write_failure(e, self.folder)
            traceback.clear_frames(e.__traceback__)
            raise refuse(self.path, f"cannot write ({reason}); nothing was written, and an earlier file there is "
                                    "as it was", running=True) from None
        try:
            os.replace(temporary, self.target)
        except OSError as e:
            raise refuse(self.path, f"cannot write ({os_reason(e)})", e.errno in RUNNING_OUT) from None


def write_failure(error, folder):
    """Why writing failed: the system's reason, or for torch's zip writer (which reports a short
    write as "unexpected pos") the disk's, where the disk is full."""
    if isinstance(error, OSError):
        return os_reason(error)
    try:
        full = shutil.disk_usage(folder).free < (1 << 20)
    except OSError:
        full = False
    if full:
        return os.strerror(errno.ENOSPC)
    lines = str(error).strip().splitlines()
    return f"torch's archive writer: {lines[0] if lines else type(error).__name__}"


def finish_archive_writers(tb):
    """Finishes every zip writer of torch (torch._C.PyTorchFileWriter, held by a PT2ArchiveWriter)
    left open in the frames of a failed write: finishing marks it finished even when it throws, so
    that its destructor does not throw again and abort the process."""
    seen = set()
    while tb is not None:
        for value in list(tb.tb_frame.f_locals.values()):
            try:
                writer = getattr(value, "archive_file", value)
                finish = getattr(writer, "write_end_of_file", None)
                if finish is None or id(writer) in seen:
                    continue
                seen.add(id(writer))
                finish()
            except Exception:  # noqa: BLE001 - the failed write is already the error reported
                pass
        tb = tb.tb_next


def is_export_archive(path):
    """A .pt2 archive as headscan export writes it: a zip with one top folder holding
    archive_format "pt2" and extra/headscan.json."""
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            tops = {name.split("/", 1)[0] for name in names}
            if len(tops) != 1:
                return False
            top = tops.pop()
            return (f"{top}/extra/headscan.json" in names and f"{top}/archive_format" in names
                    and archive.read(f"{top}/archive_format").strip() == b"pt2")
    except (OSError, zipfile.BadZipFile, ValueError, RuntimeError):
        return False


def boot_id():
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read().strip()
    except OSError:
        return None


def start_time(pid):
    """The process's start time in clock ticks since boot (/proc/PID/stat, field 22), or None
    where there is no such process."""
    try:
        with open(f"/proc/{int(pid)}/stat", encoding="utf-8", errors="replace") as f:
            stat = f.read()
    except (OSError, ValueError):
        return None
    fields = stat.rsplit(")", 1)[-1].split()  # after the command's name, which may hold anything
    return fields[19] if len(fields) > 19 else None


def owner_record(pid):
    """What proves later that process `pid` is gone, or None where this system does not say."""
    boot, start = boot_id(), start_time(pid)
    if boot is None or start is None:
        return None
    return {"host": socket.gethostname(), "boot": boot, "pid": pid, "start": start}


def is_stale(owner):
    """Whether an owner record names a process of this host that no longer runs."""
    if not isinstance(owner, dict) or owner.get("host") != socket.gethostname():
        return False
    boot, pid, start = owner.get("boot"), owner.get("pid"), owner.get("start")
    if not isinstance(boot, str) or not isinstance(pid, int) or not isinstance(start, str) or boot_id() is None:
        return False
    return boot != boot_id() or start_time(pid) != start


def remove_stale_staging(folder):
    """Removes the staging folders in `folder` whose owner.json proves their export gone."""
    try:
        entries = [entry for entry in os.scandir(folder)
                   if entry.name.startswith(STAGING_PREFIX) and entry.is_dir(follow_symlinks=False)]
    except OSError:
        return
    for entry in entries:
        try:
            with open(os.path.join(entry.path, OWNER_FILE), encoding="utf-8") as f:
                owner = json.load(f)
        except (OSError, ValueError):
            continue
        if is_stale(owner):
            shutil.rmtree(entry.path, ignore_errors=True)
