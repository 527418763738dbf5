"""The brokers' ``AlterPartitionManager`` (Kafka's ``DefaultAlterPartitionManager``): a leader's ISR change to
the KRaft controller over the "alter-partition" channel, and the answer back.

An AlterPartition goes to the controller with the leader's broker epoch and its answer comes back once the
controller committed it (``controller.quorum.append.linger.ms``), as the leader's
``Partition.handleAlterPartitionUpdate`` expects. Across a network partition that cuts the leader off from the
controller the request is sent again each ``controller.socket.timeout.ms`` until an answer gets through
(``NodeToControllerChannelManager.resend_unanswered``).

Worked example (defaults: link 0.5 ms, linger 25 ms): a leader proposes an ISR expansion at t=100; the
request reaches the controller at 100.5, its record commits at 125.5, the answer reaches the leader at 126
(Kafka's leader commits the ISR from the answer, before the metadata delta arrives at ~127.5).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkasim.broker.alter_partition import (
    AlterPartitionCallback,
    AlterPartitionReply,
    AlterPartitionRequest,
    BrokerState,
    LeaderAndIsr,
)
from kafkasim.broker.errors import Errors
from kafkasim.broker.records import TopicPartition
from kafkasim.network.observer import Observer

if TYPE_CHECKING:
    from kafkasim.server.node_to_controller_channel_manager import NodeToControllerChannelManager


class DefaultAlterPartitionManager:
    """Every broker's ``AlterPartitionManager`` over the brokers' channels to the controller; ``submitted``
    counts the requests."""

    def __init__(self, channel: NodeToControllerChannelManager, observer: Observer) -> None:
        self.channel = channel
        self.observer = observer
        self.submitted = 0

    def submit(self, topic_partition: TopicPartition, leader_and_isr: LeaderAndIsr,
               callback: AlterPartitionCallback) -> None:
        """``AlterPartitionManager.submit`` from a leader's ``Partition``: to the controller with the leader's
        broker epoch, the answer back once committed."""
        self.submitted += 1
        channel = self.channel
        observer = self.observer
        observer.alter_partition_submitted(topic_partition, leader_and_isr)
        broker_id = leader_and_isr.leader
        incarnation = channel.incarnations[broker_id]
        request = AlterPartitionRequest(
            topic_partition, leader_and_isr.leader_epoch, leader_and_isr.partition_epoch,
            tuple(BrokerState(b) for b in leader_and_isr.isr),
        )

        answered = [False]

        def answer(reply: AlterPartitionReply) -> None:
            result = _leader_and_isr(reply)

            def deliver() -> None:
                if answered[0]:
                    return  # a resent request's second answer
                answered[0] = True
                # The checker must know a committed ISR before the acknowledgements it makes possible.
                observer.alter_partition_committed(topic_partition, result)
                callback(result)
                observer.alter_partition_answered(topic_partition)

            channel.to_broker(broker_id, incarnation, deliver)

        def send() -> None:
            epoch = channel.lifecycles[broker_id].broker_epoch
            channel.controller.alter_partition(broker_id, epoch, [request], on_reply=answer)

        channel.to_controller(broker_id, send)
        if channel.cut(broker_id) is not None:
            channel.resend_unanswered(broker_id, incarnation, send, answered)


def _leader_and_isr(reply: AlterPartitionReply) -> LeaderAndIsr | Errors:
    if reply.error is not Errors.NONE:
        return reply.error
    (partition,) = reply.partitions
    if partition.error is not Errors.NONE:
        return partition.error
    return LeaderAndIsr(partition.leader, partition.leader_epoch, tuple(sorted(partition.isr)),
                        partition.partition_epoch)
