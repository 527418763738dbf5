"""The run's observer with invariant checks: ``CheckedRunObserver`` records what the components report
(it is a ``RunRecorder``) and feeds ``EngineInvariants`` at every moment a Kafka invariant can break.

Without checks the run's observer is the ``RunRecorder`` itself. The engine picks one and the builder
hands it to every component at construction (``kafkasim.network.observer.Observer`` lists the events).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from kafkasim.broker.errors import Errors
from kafkasim.record.recorder import Recorder
from kafkasim.record.run_recorder import RunRecorder
from kafkasim.run.invariant_hooks import EngineInvariants

if TYPE_CHECKING:
    from kafkasim.broker.alter_partition import LeaderAndIsr
    from kafkasim.broker.partition import Partition
    from kafkasim.broker.records import TopicPartition
    from kafkasim.network.messages import RequestEnvelope


class CheckedRunObserver(RunRecorder):
    """Records, and checks: every check event goes to ``invariants``."""

    checks = True

    def __init__(
        self,
        recorder: Recorder,
        consumers_by_topic: dict[str, int],
        invariants: EngineInvariants,
        on_request: Callable[[RequestEnvelope], None] | None = None,
    ) -> None:
        super().__init__(recorder, consumers_by_topic, on_request)
        self.invariants = invariants

    def became_leader(self, broker_id: int, tp: TopicPartition, partition: Partition) -> None:
        self.invariants.became_leader(broker_id, tp, partition)

    def acks_satisfied(self, tp: TopicPartition, required_offset: int) -> None:
        self.invariants.on_acks_satisfied(tp, required_offset)

    def request_sent(self, envelope: RequestEnvelope) -> None:
        self.invariants.on_send(envelope)

    def request_finished(self, envelope: RequestEnvelope) -> None:
        envelope.client_done = True
        self.invariants.on_client_outcome(envelope)
        super().request_finished(envelope)

    def response_built(self, envelope: RequestEnvelope) -> None:
        self.invariants.on_broker_response(envelope)

    def request_handled(self, envelope: RequestEnvelope) -> None:
        self.invariants.after_handle(envelope)

    def replica_log_end(self, tp: TopicPartition, broker_id: int, log_end_offset: int) -> None:
        self.invariants.on_follower_log_end(tp, broker_id, log_end_offset)

    def broker_crashed(self, broker_id: int, partitions: Sequence[TopicPartition]) -> None:
        self.invariants.on_follower_crash(broker_id, partitions)

    def alter_partition_submitted(self, tp: TopicPartition, request: LeaderAndIsr) -> None:
        self.invariants.on_alter_partition_submit(tp, request)

    def alter_partition_committed(self, tp: TopicPartition, result: LeaderAndIsr | Errors) -> None:
        self.invariants.on_alter_partition_commit(tp, result)

    def alter_partition_answered(self, tp: TopicPartition) -> None:
        self.invariants.after_alter_partition(tp)
