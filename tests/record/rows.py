"""Request rows for recorder tests: any object with the attributes `kafkasim.record.recorder.RequestRow` lists
is a row (in a run, the engine's RequestEnvelope). Ids are given by the caller, as the engine's IdSource
gives them in a run."""

from __future__ import annotations

import math

from kafkasim.record.recorder import REQUEST_TIMESTAMPS

NAN = math.nan


class Row:
    """A request's row with every timestamp not reached (NaN) until the test sets it."""

    def __init__(
        self,
        request_id: int,
        api: str,
        client: str,
        partitions: int,
        request_bytes: int,
        *,
        acks: int | None = None,
        broker: int = 0,
        intended_ms: float = NAN,
        client_send_ms: float = NAN,
    ) -> None:
        self.request_id = request_id
        self.api = api
        self.client = client
        self.broker = broker
        self.partitions = partitions
        self.request_bytes = request_bytes
        self.response_bytes = 0
        self.response_partitions = 0
        self.acks = acks
        self.error = 0
        self.client_timeout = False
        for name in REQUEST_TIMESTAMPS:
            setattr(self, name, NAN)
        self.intended_ms = intended_ms
        self.client_send_ms = client_send_ms
