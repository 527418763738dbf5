"""Produce response shapes: PartitionResponse and ProducePartitionStatus (Kafka's
``ProduceResponse.PartitionResponse`` and ``ProducePartitionStatus``)."""

from __future__ import annotations

from kafkasim.broker.errors import Errors


class PartitionResponse:
    """One partition of a produce response. Mutable: DelayedProduce rewrites ``error`` (its constructor
    presets REQUEST_TIMED_OUT)."""

    __slots__ = ("error", "base_offset", "last_offset", "log_append_time", "log_start_offset", "error_message")

    def __init__(
        self,
        error: Errors,
        base_offset: int = -1,
        last_offset: int = -1,
        log_append_time: int = -1,
        log_start_offset: int = -1,
        error_message: str = "",
    ) -> None:
        self.error = error
        self.base_offset = base_offset
        self.last_offset = last_offset
        self.log_append_time = log_append_time
        self.log_start_offset = log_start_offset
        self.error_message = error_message

    def __repr__(self) -> str:
        return (
            f"PartitionResponse({self.error.name}, base={self.base_offset}, last={self.last_offset}, "
            f"logStart={self.log_start_offset})"
        )


class ProducePartitionStatus:
    """A partition of a DelayedProduce: the offset the HW must reach and the response being built."""

    __slots__ = ("required_offset", "response_status", "acks_pending")

    def __init__(self, required_offset: int, response_status: PartitionResponse) -> None:
        self.required_offset = required_offset
        self.response_status = response_status
        self.acks_pending = False

    def __repr__(self) -> str:
        return (
            f"ProducePartitionStatus(requiredOffset={self.required_offset}, acksPending={self.acks_pending}, "
            f"{self.response_status!r})"
        )
