"""Stop signals during a real run: the first may abort it, none may cut its teardown short.

A real run's teardown stops every process it started, by pid (``processes.Processes``), removes its network
namespaces (``netns``), then its directory. A stop signal whose handler raises (Python's own SIGINT handler,
the CLI's SIGTERM handler) raises wherever the main thread is. A second one that arrives while the first
one's KeyboardInterrupt unwinds raises again, now inside the teardown -- at the first line of
``Processes.__exit__`` -- and the teardown is abandoned: the JVMs just launched live on, the directory is
removed under them, and each logs the NoSuchFileException of its ``server.properties`` into a directory its
log4j makes again. Two signals come together more often than one would think: ``uv run`` forwards to its
child the SIGTERM the child's process group already got, so a SIGTERM to the group reaches the run twice,
0.1 ms apart (measured, uv 0.13).

``StopSignals`` (a context manager around the whole run, main thread only) puts a handler in front of the
caller's own Python handlers of SIGINT and SIGTERM. A signal goes on to the caller's handler until the
teardown begins: when a handler raised (the run is being aborted) or at ``hold()`` (the run's end). From
then on signals are held; when the run is over they go to the caller's handlers -- unless the run ended by
an exception, whose teardown was what they asked for. A signal left to the system (SIG_DFL, SIG_IGN) is
left alone.

``deferred()`` holds them for a few lines that must not be cut in two: ``Processes.start`` between the
process's creation and its registration (a KeyboardInterrupt there would leave a JVM that nothing stops).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType, TracebackType
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM)

Handler = Callable[[int, FrameType | None], Any]


class StopSignals:
    """Hold SIGINT and SIGTERM from the start of a run's teardown until the run is over (see the module)."""

    def __init__(self) -> None:
        self._previous: dict[int, Handler] = {}
        self._holding = False
        self._held: list[int] = []

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():  # Python runs handlers there only
            for signum in SIGNALS:
                handler = signal.getsignal(signum)
                if callable(handler):
                    self._previous[signum] = handler
                    signal.signal(signum, self._handle)
        return self

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self._holding:
            self._held.append(signum)
            return
        try:
            self._previous[signum](signum, frame)
        except BaseException:
            self._holding = True  # the run is being aborted: nothing interrupts the way out
            raise

    def hold(self) -> None:
        """Hold every signal from now on (the teardown begins)."""
        self._holding = True

    @contextlib.contextmanager
    def held_after(self) -> Iterator[None]:
        """Hold every signal once the ``with`` block is left, however (list it last among the context
        managers whose exits are the teardown: its exit runs first)."""
        try:
            yield
        finally:
            self.hold()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        previous, self._previous = self._previous, {}
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        held, self._held = self._held, []
        if exc_type is None:
            for signum in dict.fromkeys(held):
                previous[signum](signum, None)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """SIGINT and SIGTERM held for the block (on the main thread; elsewhere nothing raises them), then handled."""
    with StopSignals() as signals:
        signals.hold()
        yield
