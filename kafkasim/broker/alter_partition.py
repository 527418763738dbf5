"""AlterPartition: how a leader asks the controller to commit an ISR change (Kafka's
``AlterPartitionManager``, ``Partition.maybeExpandIsr`` / ``maybeShrinkIsr`` /
``handleAlterPartitionUpdate``).

``Partition`` only sees the ``AlterPartitionManager`` protocol: ``submit`` now, answer later through the
callback. The engine answers after a modelled controller latency; ``ControllerAlterPartitionManager`` is
the controller's decision itself, answering at once or when a test says so.

The AlterPartition messages between a broker and the KRaft controller live here too (``BrokerState``,
``AlterPartitionRequest``, ``AlterPartitionResponse``, ``AlterPartitionReply``): the broker's
``DefaultAlterPartitionManager`` (``kafkasim.server``) sends them, the controller's
``ReplicationControlManager.alter_partition`` answers them.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from kafkasim.broker.errors import Errors
from kafkasim.broker.metadata import LEADER_RECOVERY_RECOVERED, NO_LEADER
from kafkasim.broker.records import TopicPartition


@dataclass(frozen=True, slots=True)
class LeaderAndIsr:
    """A partition's leadership and ISR as the controller records it (ISR sorted, leader included)."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int


@dataclass(frozen=True, slots=True)
class BrokerState:
    """AlterPartition's ``BrokerState``: an ISR member and the broker epoch the leader knows it by (-1:
    unknown, not checked)."""

    broker_id: int
    broker_epoch: int = -1


@dataclass(frozen=True, slots=True)
class AlterPartitionRequest:
    """One partition of an AlterPartition request (``AlterPartitionRequestData.PartitionData``)."""

    topic_partition: TopicPartition
    leader_epoch: int
    partition_epoch: int
    new_isr_with_epochs: tuple[BrokerState, ...]
    leader_recovery_state: int = LEADER_RECOVERY_RECOVERED


@dataclass(frozen=True, slots=True)
class AlterPartitionResponse:
    """One partition of the response: an error, or the state as of the new record."""

    topic_partition: TopicPartition
    error: Errors
    leader: int = NO_LEADER
    isr: tuple[int, ...] = ()
    leader_recovery_state: int = LEADER_RECOVERY_RECOVERED
    leader_epoch: int = -1
    partition_epoch: int = -1


@dataclass(frozen=True, slots=True)
class AlterPartitionReply:
    """The AlterPartition response: a request-level error (STALE_BROKER_EPOCH) or per-partition answers."""

    error: Errors
    partitions: tuple[AlterPartitionResponse, ...] = ()


AlterPartitionCallback = Callable[[LeaderAndIsr | Errors], None]


class AlterPartitionManager(Protocol):
    """Sends AlterPartition requests; ``callback`` later receives the committed state or an error."""

    def submit(
        self, topic_partition: TopicPartition, leader_and_isr: LeaderAndIsr, callback: AlterPartitionCallback
    ) -> None: ...


class ControllerAlterPartitionManager:
    """The controller's side of AlterPartition, in process.

    ``alter_partition`` is the KRaft controller's decision: a request from an old leader epoch is
    FENCED_LEADER_EPOCH, one built on a stale partition epoch is INVALID_UPDATE_VERSION, an ISR naming a
    fenced broker is INELIGIBLE_REPLICA; otherwise the ISR is committed with the partition epoch bumped.
    A partition the controller has not seen yet is taken at the epochs of its first request (the leader
    was set up by ``ReplicaManager.make_leader`` without a controller round trip).

    With ``auto_complete`` (default) ``submit`` answers synchronously; without it requests queue up in
    ``pending`` until ``complete_next`` / ``complete_all`` answer them, so a test can look at the pending
    ISR states first.
    """

    __slots__ = ("auto_complete", "fenced_brokers", "_committed", "_pending", "submitted")

    def __init__(self, *, auto_complete: bool = True, fenced_brokers: Iterable[int] = ()) -> None:
        self.auto_complete = auto_complete
        self.fenced_brokers: set[int] = set(fenced_brokers)
        self._committed: dict[TopicPartition, LeaderAndIsr] = {}
        self._pending: deque[tuple[TopicPartition, LeaderAndIsr, AlterPartitionCallback]] = deque()
        self.submitted = 0

    @property
    def pending(self) -> tuple[tuple[TopicPartition, LeaderAndIsr], ...]:
        return tuple((tp, request) for tp, request, _ in self._pending)

    def committed(self, topic_partition: TopicPartition) -> LeaderAndIsr | None:
        return self._committed.get(topic_partition)

    def register(self, topic_partition: TopicPartition, leader_and_isr: LeaderAndIsr) -> None:
        """Set the controller's state for a partition (e.g. after an election the engine modelled)."""
        self._committed[topic_partition] = leader_and_isr

    def submit(
        self, topic_partition: TopicPartition, leader_and_isr: LeaderAndIsr, callback: AlterPartitionCallback
    ) -> None:
        self.submitted += 1
        if self.auto_complete:
            callback(self.alter_partition(topic_partition, leader_and_isr))
        else:
            self._pending.append((topic_partition, leader_and_isr, callback))

    def complete_next(self, error: Errors | None = None) -> LeaderAndIsr | Errors:
        """Answer the oldest pending request: with ``error`` if given, else with the controller's decision."""
        if not self._pending:
            raise ValueError("ControllerAlterPartitionManager: no AlterPartition request is pending")
        topic_partition, request, callback = self._pending.popleft()
        result: LeaderAndIsr | Errors = (
            error if error is not None else self.alter_partition(topic_partition, request)
        )
        callback(result)
        return result

    def complete_all(self) -> int:
        """Answer every pending request (including ones submitted while answering); returns how many."""
        answered = 0
        while self._pending:
            self.complete_next()
            answered += 1
        return answered

    def alter_partition(self, topic_partition: TopicPartition, request: LeaderAndIsr) -> LeaderAndIsr | Errors:
        current = self._committed.get(topic_partition)
        if current is not None:
            if request.leader_epoch != current.leader_epoch:
                return Errors.FENCED_LEADER_EPOCH
            if request.partition_epoch != current.partition_epoch:
                return Errors.INVALID_UPDATE_VERSION
        if any(broker_id in self.fenced_brokers for broker_id in request.isr if broker_id != request.leader):
            return Errors.INELIGIBLE_REPLICA
        committed = LeaderAndIsr(
            request.leader, request.leader_epoch, tuple(sorted(request.isr)), request.partition_epoch + 1
        )
        self._committed[topic_partition] = committed
        return committed
