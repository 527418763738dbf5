"""What the client unit tests share."""

from __future__ import annotations

from kafkasim.network.messages import RequestEnvelope


class ScriptedConnection:
    """Keeps what the client sends on it; the test answers with ``respond``."""

    def __init__(self, sent: list[RequestEnvelope]) -> None:
        self.sent = sent
        self.closed = False
        self.connected = True
        self.on_disconnect = None  # set by the client; ``reset`` calls it

    def send(self, envelope: RequestEnvelope) -> None:
        envelope.connection = self
        self.sent.append(envelope)

    def close(self) -> None:
        self.closed = True

    def reset(self) -> None:
        """The broker's process died: the client hears of the reset."""
        self.closed = True
        self.connected = False
        if self.on_disconnect is not None:
            self.on_disconnect()
