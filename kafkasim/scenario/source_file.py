"""Reading a scenario or sweep file: a regular file of at most MAX_FILE_BYTES, or a located refusal.

A scenario is a few kilobytes (the largest shipped one is under 10 KB; 10,000 explicit replica assignments
or 1,000 faults are a few hundred). Anything else named on a command line is refused before it is read:
`/dev/zero` or `/dev/urandom` would be read until memory runs out, a FIFO with no writer would block
forever, a directory cannot be read. The check is made on the opened file (`fstat`), so a path that
changes in between cannot slip through, and the file is opened without blocking (`O_NONBLOCK`: opening a
FIFO waits for a writer otherwise). A regular file that claims to be small and is not (a `/proc` file
says size 0) is still read no further than the limit.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from kafkasim.scenario.errors import Problem, ScenarioError

MAX_FILE_BYTES = 4 * 1024 * 1024
"""4 MiB: hundreds of times the largest real scenario, far below what would strain a run's memory."""
MAX_FILE_TEXT = f"{MAX_FILE_BYTES // 2**20} MiB"

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def read_text(path: Path, what: str = "scenario") -> str:
    """The UTF-8 text of the regular file `path` (see `read_file`); ScenarioError naming the line and column
    (in characters, 1-based) of the first byte that is not UTF-8."""
    data = read_file(path, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        start = e.start
    line_start = data.rfind(b"\n", 0, start) + 1
    column = len(data[line_start:start].decode("utf-8")) + 1
    line = data.count(b"\n", 0, start) + 1
    raise ScenarioError([Problem(str(path), line, "", f"not UTF-8 text (byte 0x{data[start]:02x})", column)])


def read_file(path: Path, what: str = "scenario") -> bytes:
    """The bytes of the regular file `path`; ScenarioError naming the file when it is missing, unreadable,
    not a regular file, or larger than MAX_FILE_BYTES. `what` ("scenario", "sweep") is what the file holds."""
    label = str(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise ScenarioError([Problem(label, None, "", "file not found")]) from None
    except OSError as e:
        raise ScenarioError([Problem(label, None, "", _unreadable(e))]) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
            message = f"is {kind}, not a regular file (allowed: a {what} YAML file)"
            raise ScenarioError([Problem(label, None, "", message)])
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_FILE_BYTES:
            chunk = os.read(fd, MAX_FILE_BYTES + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as e:
        raise ScenarioError([Problem(label, None, "", _unreadable(e))]) from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > MAX_FILE_BYTES:
        message = f"is larger than {MAX_FILE_TEXT} (allowed: a {what} file of at most {MAX_FILE_TEXT}; a scenario is a few KB)"
        raise ScenarioError([Problem(label, None, "", message)])
    return data


def _unreadable(error: OSError) -> str:
    return f"cannot read the file: {error.strerror or error}"


def names_a_file(text: str) -> bool:
    """Whether a string given to a loader is a path rather than YAML text: one line naming something that
    exists (a file, or a directory or device that the reader will refuse by name), or a single-line
    "something.yaml" without a colon (a mistyped path, not a YAML document)."""
    if "\n" in text or len(text) > 4096:
        return False
    try:
        if os.path.lexists(text):
            return True
    except (OSError, ValueError):  # NUL bytes, names too long for the OS
        return False
    return text.strip().endswith((".yaml", ".yml")) and ":" not in text
