"""The ports a real run listens on: outside the kernel's ephemeral range, and claimed machine-wide.

A port in the range the kernel hands out for outgoing connections (``net.ipv4.ip_local_port_range``,
32768-60999 by default) can be taken by any connection on the machine while its listener is down. A broker
crashed at 14 s and started again at 30 s found its JMX port taken and its JVM exited with code 1 before
Kafka started ("java.rmi.server.ExportException: Port already in use"), one run in a few; a client that keeps
reconnecting to such a port can even connect to itself (TCP's simultaneous open). The kernel never hands
out a port below the range: only an explicit bind takes one. So every port here is drawn below it (above
it if the range leaves too little room below), checked free by a bind, and claimed: one file per port in
a directory of the machine's temporary directory holding the claimer's pid, written under a lock, so two
runs of one user at once (two pytest workers, two terminals) never draw the same port. A claim is released by
``release``, or at the process's exit; one whose process is gone is taken over.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import random
import socket
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
DEFAULT_EPHEMERAL = (32768, 60999)
LOWEST = 10000
"""The lowest port drawn: well-known services (below 1024) and many registered ones stay out of reach."""
MIN_ROOM = 2000
"""Ports drawn from below the ephemeral range when at least this many lie between LOWEST and it."""
MAX_DRAWS = 2000
_mine: set[int] = set()


class NoFreePorts(RuntimeError):
    """Not enough free ports outside the ephemeral range (the message says where it looked)."""


def claims_directory() -> Path:
    """The claims of this user's runs (one directory per user: another user's files could not be replaced;
    between users, the bind check alone keeps ports apart)."""
    return Path(tempfile.gettempdir()) / f"kafkasim-ports-{os.getuid()}"


def ephemeral_range(path: Path = RANGE_FILE) -> tuple[int, int]:
    """The kernel's range for outgoing connections' local ports (Linux's default where it cannot be read)."""
    try:
        low, high = (int(v) for v in path.read_text().split())
        return low, high
    except (OSError, ValueError):
        return DEFAULT_EPHEMERAL


def drawing_range(ephemeral: tuple[int, int]) -> tuple[int, int]:
    """Where ports are drawn: below the ephemeral range, else above it, else from LOWEST up anyway."""
    low, high = ephemeral
    if low - 1 - LOWEST >= MIN_ROOM:
        return LOWEST, low - 1
    if 65535 - (high + 1) >= MIN_ROOM:
        return high + 1, 65535
    return LOWEST, 65535


def claim(count: int, host: str = "127.0.0.1", *, ephemeral: tuple[int, int] | None = None) -> list[int]:
    """``count`` distinct ports, free on ``host`` now, outside the ephemeral range, claimed by this process
    until ``release`` (or its exit)."""
    low, high = drawing_range(ephemeral if ephemeral is not None else ephemeral_range())
    draw = random.SystemRandom()  # not a simulation draw: which port a listener gets changes no result
    ports: list[int] = []
    with _locked() as directory:
        for _ in range(MAX_DRAWS):
            if len(ports) == count:
                break
            port = draw.randint(low, high)
            if port in ports or port in _mine or _claimed_by_another(directory / str(port)) \
                    or not _bindable(host, port):
                continue
            (directory / str(port)).write_text(f"{os.getpid()}\n", encoding="ascii")
            ports.append(port)
            _mine.add(port)
    if len(ports) < count:
        release(ports)
        raise NoFreePorts(f"found {len(ports)} of {count} free ports in {low}-{high} on {host} "
                          f"after {MAX_DRAWS} draws")
    return ports


def release(ports: Iterable[int]) -> None:
    """Give up this process's claims of ``ports`` (others' claims are left alone)."""
    ports = [p for p in ports if p in _mine]
    if not ports:
        return
    with _locked() as directory:
        for port in ports:
            path = directory / str(port)
            if _owner(path) == os.getpid():
                with contextlib.suppress(OSError):
                    path.unlink()
            _mine.discard(port)


@contextlib.contextmanager
def _locked() -> Iterator[Path]:
    directory = claims_directory()
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield directory
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _owner(path: Path) -> int | None:
    try:
        return int(path.read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        return None


def _claimed_by_another(path: Path) -> bool:
    owner = _owner(path)
    if owner is None or owner == os.getpid():
        return False  # no claim, or a stale one of ours (a port this process claims again is its own)
    try:
        os.kill(owner, 0)
    except ProcessLookupError:
        return False  # its process is gone: taken over
    except PermissionError:
        return True
    return True


def _bindable(host: str, port: int) -> bool:
    # The host's address, and every address: a JVM's JMX agent listens on all of them.
    for address in dict.fromkeys((host, "0.0.0.0")):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind((address, port))
            except OSError:
                return False
    return True


atexit.register(lambda: release(list(_mine)))
