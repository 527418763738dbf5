"""The real processes a run starts (Kafka JVMs, the load driver, the proxy), and their stopping, by process id.

Every process is started in a new session (``start_new_session``), so it leads its own process group whose
id is its pid; it is signalled through that group (``os.killpg(pid, ...)``), which reaches whatever it
started itself and nothing else. Stopping is SIGTERM, then SIGKILL after a timeout. ``Processes`` keeps
every process a run started and stops what is still running when the run ends, fails or is interrupted
(``with Processes() as procs: ...``); from then on it starts nothing (a fault's restart on a thread of its
own that comes after the run's end gets ``ProcessesClosed``), so no process outlives the run and none
makes the run's directory again after it was removed. Nothing is ever stopped by name: other people's
processes run on the same machine.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from kafkasim.real.stop_signals import deferred

STOP_TIMEOUT_S = 15.0


@dataclass
class Proc:
    """One started process: its name in the run (``broker-1``, ``controller``, ``driver``), pid, output file."""

    name: str
    popen: subprocess.Popen[bytes]
    output: Path
    argv: Sequence[str] = field(default_factory=list)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def running(self) -> bool:
        return self.popen.poll() is None

    def signal(self, signum: int) -> None:
        """Send ``signum`` to the process's group (its pid); nothing if it has ended."""
        if self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signum)


def stop_process(pid: int, popen: subprocess.Popen[bytes] | subprocess.Popen[str], timeout_s: float = STOP_TIMEOUT_S,
                 *, kill_first: bool = False) -> None:
    """Stop the process group led by ``pid``: SIGTERM, then SIGKILL if it is still there after ``timeout_s``
    (``kill_first``: SIGKILL at once). Reaps the process."""
    if popen.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL if kill_first else signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            popen.wait(timeout=timeout_s)
    # The group may hold children the leader started; they go with it.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        popen.wait(timeout=timeout_s)


class ProcessesClosed(RuntimeError):
    """A process was to start after its run's processes were stopped (the run is over)."""


class Processes:
    """Every process of one run; a context manager that stops those still running when it exits."""

    def __init__(self) -> None:
        self._procs: list[Proc] = []
        self._lock = threading.Lock()  # a start on another thread (a fault's restart) is kept or refused whole
        self._closed = False

    def __enter__(self) -> Processes:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        # Unwinding an error or an interrupt: no grace period (a stopped run need not shut down cleanly).
        self.stop_all(kill_first=exc_type is not None)

    def start(self, name: str, argv: Sequence[str], output: Path, *, cwd: Path | None = None,
              env: dict[str, str] | None = None) -> Proc:
        """Start ``argv`` in its own process group, stdout and stderr to ``output``; ``ProcessesClosed`` once
        ``stop_all`` began (nothing started, no directory made)."""
        # A stop signal waits until the process is registered: one between the two would leave it running.
        with deferred(), self._lock:
            if self._closed:
                raise ProcessesClosed(f"{name} was not started: the run's processes have been stopped")
            output.parent.mkdir(parents=True, exist_ok=True)
            with open(output, "ab") as sink:
                popen = subprocess.Popen(list(argv), stdout=sink, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, cwd=cwd, env=env, start_new_session=True)
            proc = Proc(name, popen, output, list(argv))
            self._procs.append(proc)
        return proc

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self._procs]

    @property
    def running_by_name(self) -> dict[str, int]:
        """Each running process's name -> pid (a name started again: its newest process)."""
        return {p.name: p.pid for p in self._procs if p.running()}

    def stop(self, proc: Proc, timeout_s: float = STOP_TIMEOUT_S, *, kill_first: bool = False) -> None:
        stop_process(proc.pid, proc.popen, timeout_s, kill_first=kill_first)

    def stop_all(self, timeout_s: float = STOP_TIMEOUT_S, *, kill_first: bool = False) -> None:
        """Stop every process still running, the newest first (clients before brokers before the controller),
        all signalled before any is waited for. No process starts after it began."""
        with self._lock:
            self._closed = True
        live = [p for p in reversed(self._procs) if p.running()]
        for proc in live:
            # A stopped (SIGSTOP) process must be continued to act on SIGTERM.
            proc.signal(signal.SIGCONT)
            proc.signal(signal.SIGKILL if kill_first else signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        for proc in live:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.popen.wait(timeout=max(0.0, deadline - time.monotonic()))
        for proc in self._procs:
            stop_process(proc.pid, proc.popen, timeout_s, kill_first=True)


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    """Whether something listens on ``host:port`` (a connect succeeds)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def rss_bytes(pid: int) -> int | None:
    """Resident memory of a process (Linux /proc), None if it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def alive(pids: Iterator[int] | Sequence[int]) -> list[int]:
    """The pids of ``pids`` that still exist (zombies count as gone)."""
    out = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            out.append(pid)
    return out
