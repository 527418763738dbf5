"""The one observer every component gets at construction (desmod's probe idea): what happened to a
request, a batch, a replica or an ISR change, reported where it happens.

The run's observer (``kafkasim.run.observer``) records rows from these events and, when the scenario
enables them, checks Kafka's invariants. Components call it unconditionally; a test can pass the base
class, whose methods do nothing. Nothing is wired by setting attributes after construction.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mypy_extensions import mypyc_attr

from kafkasim.broker.observer import BrokerObserver

if TYPE_CHECKING:
    from collections.abc import Sequence

    from kafkasim.broker.alter_partition import LeaderAndIsr
    from kafkasim.broker.errors import Errors
    from kafkasim.broker.records import RecordBatch, TopicPartition
    from kafkasim.network.messages import RequestEnvelope


# An extension point (the run layer, tests and users subclass it): open to interpreted subclasses when compiled.
@mypyc_attr(allow_interpreted_subclasses=True)
class Observer(BrokerObserver):
    """Every method does nothing; the run's observer overrides them. Components call the check events
    only when ``checks`` is True (read once, at construction)."""

    # --- a request, client side ---------------------------------------------------------------------

    def request_sent(self, envelope: RequestEnvelope) -> None:
        """Check event. A client handed ``envelope`` to its connection (``Connection.send``)."""

    def request_finished(self, envelope: RequestEnvelope) -> None:
        """The client is done with a request: response received, timed out, failed with its connection,
        or (acks=0) sent."""

    # --- a request, broker side ---------------------------------------------------------------------

    def response_built(self, envelope: RequestEnvelope) -> None:
        """Check event. KafkaApis built the response (at once, or when its delayed operation completed)."""

    def request_handled(self, envelope: RequestEnvelope) -> None:
        """Check event. A request handler finished ``KafkaApis.handle`` for ``envelope`` (after the action queue)."""

    def response_done(self, envelope: RequestEnvelope) -> None:
        """The broker is done with a request: response written to the socket, dropped (closed connection),
        or a NoOp response (acks=0) dequeued."""

    # --- TCP under a connection (kafkasim.network.tcp) -----------------------------------------------

    def tcp_retransmission(self, client: str, broker: int, direction: str, time_ms: float, lost_since_ms: float,
                           outcome: str) -> None:
        """The kernel's retransmission timer of ``client``'s connection to ``broker`` fired for the stream
        ``direction`` (``to_broker``: requests, ``from_broker``: responses), whose head segment has been lost
        since ``lost_since_ms``; ``outcome`` is ``TCP_THROUGH`` (the stream resumes), ``TCP_LOST_AGAIN`` (the RTO
        doubles) or ``TCP_GAVE_UP`` (tcp_retries2's time is over: the connection is broken)."""

    # --- batches ------------------------------------------------------------------------------------

    def batch_finished(self, producer: str, acks: int, batch: object, ack_ms: float, error: Errors,
                       base_offset: int) -> None:
        """A producer's batch (a ``ProducerBatch``) was acknowledged or failed; ``acks`` is the setting it
        was sent with."""

    def batch_consumed(self, consumer: str, batch: RecordBatch, receive_ms: float) -> None:
        """A consumer received a complete batch for the first time."""

    # --- replicas and the ISR -----------------------------------------------------------------------

    def replica_log_end(self, tp: TopicPartition, broker_id: int, log_end_offset: int) -> None:
        """Check event. A follower's local log end changed (append, truncation)."""

    def replica_high_watermark(self, tp: TopicPartition, broker_id: int, high_watermark: int,
                               log_end_offset: int, leader_epoch: int) -> None:
        """Check event. A follower's local HW after a fetch response from the leader of ``leader_epoch``, or
        after a truncation or restart (``leader_epoch`` -1)."""

    def broker_crashed(self, broker_id: int, partitions: Sequence[TopicPartition]) -> None:
        """Broker ``broker_id`` stopped; the logs of ``partitions`` it replicated may lose unflushed data."""

    def alter_partition_submitted(self, tp: TopicPartition, request: LeaderAndIsr) -> None:
        """The leader sent an AlterPartition request (its maximal ISR may have grown)."""

    def alter_partition_committed(self, tp: TopicPartition, result: LeaderAndIsr | Errors) -> None:
        """The controller answered (before the leader applies the answer)."""

    def alter_partition_answered(self, tp: TopicPartition) -> None:
        """The leader applied the controller's answer."""
