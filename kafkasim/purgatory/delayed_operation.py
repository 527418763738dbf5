"""DelayedOperation: a request that waits in a purgatory until it can complete or times out."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable

from mypy_extensions import mypyc_attr

from kafkasim.timer import TimerTask


# An extension point, as Kafka's DelayedOperation is: open to interpreted subclasses when compiled (mypyc).
@mypyc_attr(allow_interpreted_subclasses=True)
class DelayedOperation(TimerTask):
    """Kafka's `DelayedOperation`: a `TimerTask` whose delay is the request timeout.

    Subclasses implement `try_complete` (check the condition; if met, `return self.force_complete()`),
    `on_complete` (build and send the response; called exactly once) and `on_expiration` (called after
    `on_complete` when the timeout completed the operation).

    Kafka guards `try_complete` with a per-operation lock so that two threads cannot check the same
    operation at once. The simulator runs one thing at a time, so there is no lock; the `safe_*` methods
    keep Kafka's names and call order.
    """

    __slots__ = ("_completed", "_watch_seq")

    def __init__(self, delay_ms: int) -> None:
        super().__init__(delay_ms)
        self._completed = False
        # Set when the operation is watched in a purgatory with group watches: its place in every watch list
        # it joins, which is how a key's list gets a group's operations in watch order (`GroupWatchStrategy`).
        self._watch_seq = 0

    @abstractmethod
    def try_complete(self) -> bool:
        """Check whether the operation can complete now; if so, `return self.force_complete()`."""
        # Reached only in the compiled build, whose abstract classes are not checked at construction.
        raise NotImplementedError(f"{type(self).__name__} does not implement DelayedOperation.try_complete")

    @abstractmethod
    def on_complete(self) -> None:
        """Complete the operation (build and send the response). Called exactly once."""
        raise NotImplementedError(f"{type(self).__name__} does not implement DelayedOperation.on_complete")

    @abstractmethod
    def on_expiration(self) -> None:
        """Extra work when the timeout completed the operation; runs after `on_complete`."""
        raise NotImplementedError(f"{type(self).__name__} does not implement DelayedOperation.on_expiration")

    @property
    def is_completed(self) -> bool:
        return self._completed

    def force_complete(self) -> bool:
        """Complete now unless something already did: True iff this call completed the operation.

        Kafka's `forceComplete`: the timer entry is cancelled *before* `on_complete`, so `num_delayed` has
        already dropped when the response is built; the flag makes completion exactly-once (Kafka's CAS).
        """
        if self._completed:
            return False
        self._completed = True
        self.cancel()
        self.on_complete()
        return True

    def safe_try_complete(self) -> bool:
        """`try_complete` under the operation lock (used by `check_and_complete`)."""
        return self.try_complete()

    def safe_try_complete_or_else(self, action: Callable[[], None]) -> bool:
        """Check; if not complete run `action` (watch the keys) and check again, all under the operation
        lock (Kafka's `safeTryCompleteOrElse`, used by `try_complete_else_watch`)."""
        if self.try_complete():
            return True
        action()
        # The "last completion check": anything that changed while the keys were being watched is seen.
        return self.try_complete()

    def run(self) -> None:
        """Timer expiry: complete, then `on_expiration` (only if the timeout is what completed it)."""
        if self.force_complete():
            self.on_expiration()
