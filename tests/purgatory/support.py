"""What the purgatory property tests share."""

from __future__ import annotations

from kafkasim.purgatory import DelayedOperation
from kafkasim.timer import ManualTime


class Op(DelayedOperation):
    """An operation the test completes by setting ``completable``; it logs (id, outcome, time)."""

    def __init__(self, ident: int, delay_ms: int, time: ManualTime, log: list[tuple[int, str, int]]) -> None:
        super().__init__(delay_ms)
        self.ident = ident
        self.completable = False
        self.time = time
        self.log = log

    def try_complete(self) -> bool:
        return self.force_complete() if self.completable else False

    def on_complete(self) -> None:
        self.log.append((self.ident, "complete", self.time.milliseconds()))

    def on_expiration(self) -> None:
        self.log.append((self.ident, "expire", self.time.milliseconds()))
