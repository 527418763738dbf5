"""``FetchMetadata``: a fetch request's session fields (KIP-227), Kafka's ``requests/FetchMetadata.java``,
with its constants and epoch arithmetic."""

from __future__ import annotations

from typing import Final, NamedTuple

INT_MAX: Final = 2**31 - 1

# FetchMetadata's constants.
INVALID_SESSION_ID: Final = 0
"""The session id of a client with no session."""
INITIAL_EPOCH: Final = 0
"""In a request: create (or re-create) a session."""
FINAL_EPOCH: Final = -1
"""In a request: close any existing session and do not create a new one."""

def next_epoch(prev_epoch: int) -> int:
    """``FetchMetadata.nextEpoch``: after FINAL_EPOCH comes FINAL_EPOCH; after INT_MAX, 1 (never 0, which
    means "create a session")."""
    if prev_epoch < 0:
        return FINAL_EPOCH
    if prev_epoch == INT_MAX:
        return 1
    return prev_epoch + 1


class FetchMetadata(NamedTuple):
    """A fetch request's session fields (Kafka's ``FetchMetadata``): ``(0, 0)`` full, create a session;
    ``(id, 0)`` full, close ``id`` and create a new one; ``(id, -1)`` full, close ``id``, sessionless;
    ``(id, e >= 1)`` incremental."""

    session_id: int
    epoch: int

    @property
    def is_full(self) -> bool:
        return self.epoch == INITIAL_EPOCH or self.epoch == FINAL_EPOCH

    def next_close_existing(self) -> FetchMetadata:
        return FetchMetadata(self.session_id, FINAL_EPOCH)

    def next_close_existing_attempt_new(self) -> FetchMetadata:
        return FetchMetadata(self.session_id, INITIAL_EPOCH)

    def next_incremental(self) -> FetchMetadata:
        return FetchMetadata(self.session_id, next_epoch(self.epoch))

    def __str__(self) -> str:
        session = "INVALID" if self.session_id == INVALID_SESSION_ID else str(self.session_id)
        epoch = {INITIAL_EPOCH: "INITIAL", FINAL_EPOCH: "FINAL"}.get(self.epoch, str(self.epoch))
        return f"(sessionId={session}, epoch={epoch})"


INITIAL_METADATA: Final = FetchMetadata(INVALID_SESSION_ID, INITIAL_EPOCH)
"""``FetchMetadata.INITIAL``: what a new ``FetchSessionHandler`` sends first."""
LEGACY_METADATA: Final = FetchMetadata(INVALID_SESSION_ID, FINAL_EPOCH)
"""``FetchMetadata.LEGACY``: a request that wants no session at all (sessionless)."""


def new_incremental(session_id: int) -> FetchMetadata:
    """``FetchMetadata.newIncremental``: the first incremental request of a new session (epoch 1)."""
    return FetchMetadata(session_id, next_epoch(INITIAL_EPOCH))
