"""What the client unit tests share."""

from __future__ import annotations

from collections.abc import Callable

from kafkasim.network.messages import RequestEnvelope

_SENT_ON: dict[int, tuple[RequestEnvelope, ScriptedConnection]] = {}


def connection_of(envelope: RequestEnvelope) -> ScriptedConnection:
    """The scripted connection ``envelope`` was sent on (``RequestEnvelope.connection`` is the broker's side)."""
    sent, connection = _SENT_ON[id(envelope)]
    assert sent is envelope
    return connection


class ScriptedConnection:
    """Keeps what the client sends on it; the test answers with ``respond``. It is established as soon as the
    client connects (no handshake: ``NetworkClient.ready`` answers True at once)."""

    def __init__(self, sent: list[RequestEnvelope]) -> None:
        self.sent = sent
        self.closed = False
        self.connected = False
        self.on_disconnect: Callable[[], None] | None = None  # set by the client; ``reset`` calls it

    def connect(self, on_established: Callable[[], None], on_disconnect: Callable[[], None]) -> None:
        self.connected = True
        self.on_disconnect = on_disconnect

    def send(self, envelope: RequestEnvelope) -> None:
        _SENT_ON[id(envelope)] = (envelope, self)
        self.sent.append(envelope)

    def close(self) -> None:
        self.closed = True

    def reset(self) -> None:
        """The broker's process died: the client hears of the reset."""
        self.closed = True
        self.connected = False
        if self.on_disconnect is not None:
            self.on_disconnect()
