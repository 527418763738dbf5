"""What the client unit tests share."""

from __future__ import annotations

from kafkasim.network.messages import RequestEnvelope


class ScriptedConnection:
    """Keeps what the client sends on it; the test answers with ``respond``."""

    def __init__(self, sent: list[RequestEnvelope]) -> None:
        self.sent = sent
        self.closed = False

    def send(self, envelope: RequestEnvelope) -> None:
        envelope.connection = self
        self.sent.append(envelope)

    def close(self) -> None:
        self.closed = True
