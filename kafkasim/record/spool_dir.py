"""The recorder's spool directories: made with their owner written in them, and cleared once the owner is gone.

A run spools its rows to Parquet in a temporary directory (``kafkasim-spool-*``) that it deletes when its
recorder goes or the process exits. A process killed (SIGKILL, the OOM killer, a machine that lost power)
deletes nothing, and its directory, up to several MB, would stay forever. So each directory holds a file
naming its owner -- process id, the process's start time (``/proc/<pid>/stat``, field 22, in clock ticks
since boot), the boot id and the pid namespace -- and a run, when it starts, deletes the spool directories
in its temporary directory whose owner is gone: another boot, or no process with that id, or one with that
id that started at another time (the id was reused).

What is never deleted: anything not named ``kafkasim-spool-*``, not a directory (a symbolic link is not),
not owned by this user, without a readable owner file, holding anything but the spool's own files, or whose
owner's pid namespace is not this process's (a container sharing the temporary directory: its process ids
mean nothing here). Nothing is ever signalled: whether a process lives is read from ``/proc``. Where there is
no ``/proc`` (not Linux), nothing is cleared.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

PREFIX = "kafkasim-spool-"
OWNER_FILE = "owner.json"
# What a spool directory holds: its owner file and one Parquet file per table (recorder.TABLES' names).
SPOOL_FILES = frozenset((OWNER_FILE, "requests.parquet", "records.parquet", "timeseries.parquet"))
_PROC = Path("/proc")


def _start_ticks(pid: int) -> int | None:
    """The start time of process `pid` (clock ticks since boot), or None if there is no such process."""
    try:
        stat = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold spaces or parentheses: split after the last.
    fields = stat[stat.rindex(")") + 2:].split()
    return int(fields[19])  # field 22 of the whole line


def _boot_id() -> str | None:
    try:
        return (_PROC / "sys" / "kernel" / "random" / "boot_id").read_text().strip()
    except OSError:
        return None


def _pid_namespace() -> str | None:
    try:
        return os.readlink(_PROC / "self" / "ns" / "pid")
    except OSError:
        return None


def owner() -> dict[str, object] | None:
    """This process as a spool directory's owner, or None where /proc does not tell it."""
    pid = os.getpid()
    start, boot, namespace = _start_ticks(pid), _boot_id(), _pid_namespace()
    if start is None or boot is None or namespace is None:
        return None
    return {"pid": pid, "start_ticks": start, "boot_id": boot, "pid_namespace": namespace}


def make_spool_dir(parent: Path | None) -> Path:
    """A new spool directory under `parent` (the temporary directory when None), its owner written in it."""
    path = Path(tempfile.mkdtemp(prefix=PREFIX, dir=parent))
    me = owner()
    if me is not None:
        (path / OWNER_FILE).write_text(json.dumps(me) + "\n", encoding="utf-8")
    return path


def _abandoned(path: Path, me: dict[str, object]) -> bool:
    """Is `path` a spool directory of ours whose owner is gone (see the module docstring)?"""
    try:
        if path.is_symlink() or not path.is_dir() or path.stat().st_uid != os.getuid():
            return False
        if any(entry.name not in SPOOL_FILES or entry.is_symlink() or not entry.is_file()
               for entry in path.iterdir()):
            return False
        written = json.loads((path / OWNER_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(written, dict) or set(written) != set(me):
        return False
    pid, start = written["pid"], written["start_ticks"]
    if not isinstance(pid, int) or not isinstance(start, int) or written["pid_namespace"] != me["pid_namespace"]:
        return False
    if written["boot_id"] != me["boot_id"]:
        return True  # the machine has restarted since: its owner is gone
    if pid == me["pid"]:
        return start != me["start_ticks"]
    return _start_ticks(pid) != start  # no such process, or another one that reuses the id


def clear_abandoned_spools(parent: Path | None = None) -> list[Path]:
    """Delete the spool directories under `parent` (the temporary directory when None) whose owning process is
    gone; return them. Never raises: a directory that cannot be read or deleted is left."""
    me = owner()
    if me is None:
        return []
    directory = Path(parent) if parent is not None else Path(tempfile.gettempdir())
    cleared = []
    try:
        candidates = [p for p in directory.iterdir() if p.name.startswith(PREFIX)]
    except OSError:
        return []
    for path in candidates:
        if _abandoned(path, me):
            shutil.rmtree(path, ignore_errors=True)
            if not path.exists():
                cleared.append(path)
    return cleared


_cleared_by: dict[Path | None, int] = {}


def clear_abandoned_spools_once(parent: Path | None = None) -> None:
    """`clear_abandoned_spools`, once per process and parent (a sweep's worker starts run after run)."""
    pid = os.getpid()
    if _cleared_by.get(parent) != pid:  # a forked child clears again: its parent's check was not its own
        _cleared_by[parent] = pid
        clear_abandoned_spools(parent)
