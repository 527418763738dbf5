"""The run's observer: every component's reports become recorder rows and, when the scenario enables
them (``invariants: true``, the default), invariant checks.

``RunObserver`` records; ``CheckedRunObserver`` also checks. The builder picks one and hands it to every
component at construction (``kafkasim.network.observer.Observer`` lists the events).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kafkasim.broker.errors import Errors
from kafkasim.network.observer import Observer
from kafkasim.record.run_recorder import RunRecorder
from kafkasim.run.invariant_hooks import EngineInvariants

if TYPE_CHECKING:
    from kafkasim.broker.alter_partition import LeaderAndIsr
    from kafkasim.broker.partition import Partition
    from kafkasim.broker.records import RecordBatch, TopicPartition
    from kafkasim.clients.accumulator import ProducerBatch
    from kafkasim.network.messages import RequestEnvelope


class RunObserver(Observer):
    """Records what the components report (``RunRecorder``); checks nothing."""

    def __init__(self, recorder: RunRecorder) -> None:
        self.recorder = recorder

    @property
    def invariants(self) -> EngineInvariants | None:
        return None

    def request_finished(self, envelope: RequestEnvelope) -> None:
        self.recorder.request_finished(envelope)

    def response_done(self, envelope: RequestEnvelope) -> None:
        self.recorder.broker_done(envelope)

    def batch_finished(self, producer: str, acks: int, batch: object, ack_ms: float, error: Errors,
                       base_offset: int) -> None:
        pb: ProducerBatch = batch  # type: ignore[assignment]
        self.recorder.batch_finished(producer, acks, pb, ack_ms, error, base_offset)

    def batch_consumed(self, consumer: str, batch: RecordBatch, receive_ms: float) -> None:
        self.recorder.batch_consumed(consumer, batch, receive_ms)


class CheckedRunObserver(RunObserver):
    """Records, and feeds ``EngineInvariants`` at every moment a Kafka invariant can break."""

    def __init__(self, recorder: RunRecorder, invariants: EngineInvariants) -> None:
        super().__init__(recorder)
        self._invariants = invariants

    @property
    def invariants(self) -> EngineInvariants | None:
        return self._invariants

    def became_leader(self, broker_id: int, tp: TopicPartition, partition: Partition) -> None:
        self._invariants.became_leader(broker_id, tp, partition)

    def acks_satisfied(self, tp: TopicPartition, required_offset: int) -> None:
        self._invariants.on_acks_satisfied(tp, required_offset)

    def request_sent(self, envelope: RequestEnvelope) -> None:
        self._invariants.on_send(envelope)

    def request_finished(self, envelope: RequestEnvelope) -> None:
        envelope.client_done = True
        self._invariants.on_client_outcome(envelope)
        self.recorder.request_finished(envelope)

    def response_built(self, envelope: RequestEnvelope) -> None:
        self._invariants.on_broker_response(envelope)

    def request_handled(self, envelope: RequestEnvelope) -> None:
        self._invariants.after_handle(envelope)

    def replica_log_end(self, tp: TopicPartition, broker_id: int, log_end_offset: int) -> None:
        self._invariants.on_follower_log_end(tp, broker_id, log_end_offset)

    def broker_crashed(self, broker_id: int, partitions: Sequence[TopicPartition]) -> None:
        self._invariants.on_follower_crash(broker_id, partitions)

    def alter_partition_submitted(self, tp: TopicPartition, request: LeaderAndIsr) -> None:
        self._invariants.on_alter_partition_submit(tp, request)

    def alter_partition_committed(self, tp: TopicPartition, result: LeaderAndIsr | Errors) -> None:
        self._invariants.on_alter_partition_commit(tp, result)

    def alter_partition_answered(self, tp: TopicPartition) -> None:
        self._invariants.after_alter_partition(tp)
