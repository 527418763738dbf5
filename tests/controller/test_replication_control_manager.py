"""Ported from Kafka's ``ReplicationControlManagerTest`` (and the controller events around it), through
``ControllerTestContext`` (Kafka's ``ReplicationControlTestContext``)."""

from __future__ import annotations

import pytest

from kafkasim.broker.errors import Errors, KafkaError
from kafkasim.broker.metadata import (
    LEADER_RECOVERY_RECOVERED,
    LEADER_RECOVERY_RECOVERING,
    NO_LEADER,
    PartitionRegistration,
)
from kafkasim.broker.records import TopicPartition
from kafkasim.controller.broker_heartbeat_manager import BrokerHeartbeatRequest
from kafkasim.controller.records import (
    FENCE,
    UNFENCE,
    BrokerRegistrationChangeRecord,
    PartitionChangeRecord,
)
from kafkasim.controller.replication_control_manager import BrokerHeartbeatReply
from tests.controller.controller_context import ControllerTestContext


def ctx_with(*brokers: int) -> ControllerTestContext:
    ctx = ControllerTestContext()
    ctx.register_brokers(*brokers)
    ctx.unfence_brokers(*brokers)
    return ctx


def leader_and_isr(ctx: ControllerTestContext, topic: str, index: int) -> tuple[int, tuple[int, ...]]:
    p = ctx.partition(topic, index)
    return p.leader, p.isr


def test_registration_epoch_is_record_offset_and_broker_starts_fenced() -> None:
    """Kafka: ClusterControlManager.registerBroker -- the broker epoch is the RegisterBrokerRecord's offset and
    the broker is fenced until a heartbeat shows it caught up to that offset."""
    ctx = ControllerTestContext()
    ctx.register_brokers(0, 1)
    assert (ctx.epoch(0), ctx.epoch(1)) == (0, 1)
    registration = ctx.cluster.registration(1)
    assert registration is not None and registration.fenced
    reply = ctx.heartbeat(1, offset=0)  # not caught up to its registration offset 1
    assert reply == BrokerHeartbeatReply(is_caught_up=False, is_fenced=True, in_controlled_shutdown=False,
                                         should_shut_down=False)
    reply = ctx.heartbeat(1, offset=1)
    assert reply == BrokerHeartbeatReply(True, False, False, False)
    batch = ctx.core.log.batches[-1]
    assert batch.records == (BrokerRegistrationChangeRecord(1, 1, fenced=UNFENCE),)
    assert batch.base_offset == 2


def test_heartbeat_with_stale_epoch() -> None:
    """Kafka: ClusterControlManager.checkBrokerEpoch -- STALE_BROKER_EPOCH, nothing written."""
    ctx = ctx_with(0)
    end = ctx.core.log.end_offset
    result = ctx.core.process_broker_heartbeat(BrokerHeartbeatRequest(0, 99, end))
    assert result.response.error is Errors.STALE_BROKER_EPOCH and result.batch is None
    result = ctx.core.process_broker_heartbeat(BrokerHeartbeatRequest(7, 0, end))
    assert result.response.error is Errors.STALE_BROKER_EPOCH


def test_create_topic_from_assignment() -> None:
    """Kafka: ReplicationControlManagerTest.testCreateTopics -- leader = first replica, ISR = all, epochs 0."""
    ctx = ctx_with(0, 1, 2)
    ctx.create_topic("foo", [(0, 1, 2), (1, 2, 0)])
    assert ctx.partition("foo", 0) == PartitionRegistration((0, 1, 2), (0, 1, 2), 0, 0, 0)
    assert ctx.partition("foo", 1) == PartitionRegistration((1, 2, 0), (1, 2, 0), 1, 0, 0)


def test_remove_leaderships() -> None:
    """Kafka: ReplicationControlManagerTest.testRemoveLeaderships."""
    ctx = ctx_with(0, 1, 2, 3)
    ctx.create_topic("foo", [(0, 1, 2), (1, 2, 3), (2, 3, 0), (0, 2, 1)])
    assert ctx.replication.has_leaderships(0)
    records: list = []
    ctx.replication.handle_broker_fenced(0, records)
    ctx.core._append(records)
    assert not ctx.replication.has_leaderships(0)
    assert leader_and_isr(ctx, "foo", 0) == (1, (1, 2))
    assert leader_and_isr(ctx, "foo", 3) == (2, (2, 1))


def test_fence_multiple_brokers() -> None:
    """Kafka: ReplicationControlManagerTest.testFenceMultipleBrokers."""
    ctx = ctx_with(0, 1, 2, 3, 4)
    ctx.create_topic("foo", [(1, 2, 3), (2, 3, 4), (0, 2, 1)])
    ctx.fence_brokers({2, 3})
    assert leader_and_isr(ctx, "foo", 0) == (1, (1,))
    assert leader_and_isr(ctx, "foo", 1) == (4, (4,))
    assert ctx.partition("foo", 2).isr == (0, 1)
    assert ctx.partition("foo", 2).leader != 2


def test_fencing_one_stale_broker_per_event() -> None:
    """Kafka: QuorumController.maybeFenceStaleBroker / ReplicationControlManager.maybeFenceOneStaleBroker --
    each event fences one broker and writes one batch of its own (its partition changes, then the
    BrokerRegistrationChangeRecord)."""
    ctx = ctx_with(0, 1, 2, 3, 4)
    ctx.create_topic("foo", [(1, 2, 3), (2, 3, 4), (0, 2, 1)])
    ctx.time.sleep(9001)
    for b in (0, 1, 4):
        ctx.heartbeat(b)
    before = len(ctx.core.log.batches)
    first = ctx.core.maybe_fence_one_stale_broker()
    second = ctx.core.maybe_fence_one_stale_broker()
    third = ctx.core.maybe_fence_one_stale_broker()
    assert (first.response, second.response, third.response) == (2, 3, None)
    assert third.batch is None
    assert len(ctx.core.log.batches) == before + 2
    assert first.batch is not None and first.batch.records == (
        PartitionChangeRecord(TopicPartition("foo", 0), isr=(1, 3)),
        PartitionChangeRecord(TopicPartition("foo", 1), leader=3, isr=(3, 4)),
        PartitionChangeRecord(TopicPartition("foo", 2), isr=(0, 1)),
        BrokerRegistrationChangeRecord(2, ctx.epoch(2), fenced=FENCE),
    )
    # Follower fenced: same leader epoch, partition epoch +1; leader fenced: both +1.
    p0, p1 = ctx.partition("foo", 0), ctx.partition("foo", 1)
    assert (p0.leader_epoch, p0.partition_epoch) == (0, 2)
    assert (p1.leader, p1.leader_epoch, p1.partition_epoch) == (4, 2, 2)


def test_last_isr_member_fenced_keeps_isr_and_no_leader() -> None:
    """Kafka: PartitionChangeBuilder.build via handleBrokerFenced -- the last ISR member fenced: leader -1, the
    ISR keeps it, leader epoch +1; unfencing it re-elects it cleanly (handleBrokerUnfenced)."""
    ctx = ctx_with(0, 1, 2)
    ctx.create_topic("foo", [(0, 1, 2)])
    ctx.fence_brokers({1, 2})
    ctx.fence_brokers({0, 1, 2})
    p = ctx.partition("foo", 0)
    assert (p.leader, p.isr, p.leader_epoch) == (NO_LEADER, (0,), 1)
    assert ctx.replication.are_some_partitions_leaderless()
    ctx.unfence_brokers(1)
    assert ctx.partition("foo", 0).leader == NO_LEADER  # 1 is not in the ISR: no clean election
    ctx.unfence_brokers(0)
    p = ctx.partition("foo", 0)
    assert (p.leader, p.isr, p.leader_epoch, p.leader_recovery_state) == (0, (0,), 2, LEADER_RECOVERY_RECOVERED)


def test_unfence_does_not_restore_isr_or_preferred_leadership() -> None:
    """Kafka: handleBrokerUnfenced -- elections only for leaderless partitions; the broker is not re-added to
    any ISR and leadership does not move back to the preferred replica."""
    ctx = ctx_with(0, 1, 2)
    ctx.create_topic("foo", [(0, 1, 2)])
    ctx.fence_brokers({0})
    assert leader_and_isr(ctx, "foo", 0) == (1, (1, 2))
    ctx.unfence_brokers(0)
    assert leader_and_isr(ctx, "foo", 0) == (1, (1, 2))
    assert ctx.core.log.batches[-1].records == (BrokerRegistrationChangeRecord(0, ctx.epoch(0), fenced=UNFENCE),)


def test_process_broker_heartbeat_in_controlled_shutdown() -> None:
    """Kafka: ReplicationControlManagerTest.testProcessBrokerHeartbeatInControlledShutdown: the
    in-controlled-shutdown record first, then the partition moves."""
    ctx = ctx_with(0, 1, 2)
    ctx.create_topic("foo", [(0, 1, 2)])
    reply = ctx.heartbeat(0, want_shutdown=True)
    assert reply == BrokerHeartbeatReply(True, False, True, False)
    batch = ctx.core.log.batches[-1]
    assert batch.records == (
        BrokerRegistrationChangeRecord(0, ctx.epoch(0), in_controlled_shutdown=True),
        PartitionChangeRecord(TopicPartition("foo", 0), leader=1, isr=(1, 2)),
    )
    state = ctx.heartbeats.state(0)
    assert state is not None and state.controlled_shutdown_offset == batch.last_offset
    assert not ctx.cluster.is_active(0)


def test_controlled_shutdown_waits_for_active_brokers_to_catch_up() -> None:
    """Kafka: calculateNextBrokerState, CONTROLLED_SHUTDOWN -> SHUTDOWN_NOW once it leads nothing and every
    active broker reported a metadata offset >= the shutdown records' offset (lowestActiveOffset)."""
    ctx = ctx_with(0, 1, 2)
    ctx.create_topic("foo", [(0, 1, 2)])
    ctx.heartbeat(0, want_shutdown=True)
    shutdown_offset = ctx.core.log.end_offset
    ctx.heartbeat(1, offset=shutdown_offset - 1)
    ctx.heartbeat(2, offset=shutdown_offset)
    reply = ctx.heartbeat(0, want_shutdown=True)
    assert reply.in_controlled_shutdown and not reply.should_shut_down
    ctx.heartbeat(1, offset=shutdown_offset)
    reply = ctx.heartbeat(0, want_shutdown=True)
    assert reply == BrokerHeartbeatReply(True, True, False, True)
    assert ctx.core.log.batches[-1].records == (BrokerRegistrationChangeRecord(0, ctx.epoch(0), fenced=FENCE),)


def test_shutdown_now_without_leaderships() -> None:
    """Kafka: calculateNextBrokerState, UNFENCED + wantShutDown and no leaderships => SHUTDOWN_NOW, fenced at
    once (handleBrokerFenced removes it from ISRs)."""
    ctx = ctx_with(0, 1, 2)
    ctx.create_topic("foo", [(0, 1, 2)])
    reply = ctx.heartbeat(2, want_shutdown=True)
    assert reply.should_shut_down and reply.is_fenced
    assert leader_and_isr(ctx, "foo", 0) == (0, (0, 1))


def test_shrink_and_expand_isr() -> None:
    """Kafka: ReplicationControlManagerTest.testShrinkAndExpandIsr: responses carry the new state."""
    ctx = ctx_with(0, 1, 2)
    ctx.create_topic("foo", [(0, 1, 2)])
    reply = ctx.alter_partition("foo", 0, 0, [0, 1])
    assert reply.error is Errors.NONE
    (resp,) = reply.partitions
    p = ctx.partition("foo", 0)
    assert resp.error is Errors.NONE
    assert (resp.leader, resp.isr, resp.leader_epoch, resp.partition_epoch) == (0, (0, 1), 0, 1)
    assert (p.leader, p.isr, p.leader_epoch, p.partition_epoch) == (0, (0, 1), 0, 1)
    (resp,) = ctx.alter_partition("foo", 0, 0, [0, 1, 2]).partitions
    assert (resp.error, resp.isr, resp.leader_epoch, resp.partition_epoch) == (Errors.NONE, (0, 1, 2), 0, 2)


def test_alter_partition_no_op_succeeds_without_record() -> None:
    """Kafka: alterPartition -- a request that changes nothing writes no record and answers the current state."""
    ctx = ctx_with(0, 1, 2)
    ctx.create_topic("foo", [(0, 1, 2)])
    result = ctx.core.alter_partition(0, ctx.epoch(0), [])
    assert result.batch is None
    (resp,) = ctx.alter_partition("foo", 0, 0, [0, 1, 2]).partitions
    assert (resp.error, resp.partition_epoch) == (Errors.NONE, 0)


def test_invalid_alter_partition_requests() -> None:
    """Kafka: ReplicationControlManagerTest.testInvalidAlterPartitionRequests."""
    ctx = ctx_with(0, 1, 2)
    ctx.create_topic("foo", [(0, 1, 2)])

    def error(**kwargs: object) -> Errors:
        reply = ctx.alter_partition("foo", 0, **kwargs)  # type: ignore[arg-type]
        if reply.error is not Errors.NONE:
            return reply.error
        return reply.partitions[0].error

    assert error(leader=1, isr=[0, 1]) is Errors.INVALID_REQUEST  # not the leader
    assert error(leader=0, isr=[0, 1], broker_epoch=ctx.epoch(0) - 1) is Errors.STALE_BROKER_EPOCH
    assert error(leader=0, isr=[0, 1], leader_epoch=500) is Errors.NOT_CONTROLLER
    assert error(leader=0, isr=[0, 1], partition_epoch=500) is Errors.NOT_CONTROLLER
    assert error(leader=0, isr=[0, 1, 3]) is Errors.INVALID_REQUEST  # 3 is not a replica
    assert error(leader=0, isr=[1, 2]) is Errors.INVALID_REQUEST  # the leader must stay in the ISR
    assert error(leader=0, isr=[0, 1], recovery=LEADER_RECOVERY_RECOVERING) is Errors.INVALID_REQUEST
    assert error(leader=0, isr=[0], recovery=LEADER_RECOVERY_RECOVERING) is Errors.INVALID_REQUEST
    assert error(leader=0, isr=[0, 0, 1]) is Errors.INVALID_REQUEST  # duplicates
    assert ctx.partition("foo", 0).partition_epoch == 0  # nothing was written


def test_alter_partition_stale_epochs() -> None:
    """Kafka: validateAlterPartitionData -- an older leader epoch is FENCED_LEADER_EPOCH, an older partition
    epoch (same leader epoch) INVALID_UPDATE_VERSION; an unknown partition UNKNOWN_TOPIC_OR_PARTITION."""
    ctx = ctx_with(0, 1, 2)
    ctx.create_topic("foo", [(0, 1, 2), (0, 1, 2)])
    ctx.alter_partition("foo", 0, 0, [0, 1])  # partition epoch 1
    (resp,) = ctx.alter_partition("foo", 0, 0, [0, 1, 2], partition_epoch=0).partitions
    assert resp.error is Errors.INVALID_UPDATE_VERSION
    ctx.fence_brokers({0})  # foo-1: leader 1, leader epoch 1
    ctx.unfence_brokers(0)
    (resp,) = ctx.alter_partition("foo", 1, 1, [1, 2], leader_epoch=0, partition_epoch=1).partitions
    assert resp.error is Errors.FENCED_LEADER_EPOCH
    # The deposed leader 0 (no longer the leader) with its old leader epoch: FENCED_LEADER_EPOCH is checked
    # before "sender is not the leader" (INVALID_REQUEST).
    assert ctx.partition("foo", 0).leader == 1
    (resp,) = ctx.alter_partition("foo", 0, 0, [0, 1], leader_epoch=0, partition_epoch=1).partitions
    assert resp.error is Errors.FENCED_LEADER_EPOCH
    (resp,) = ctx.alter_partition("bar", 0, 1, [1], leader_epoch=0, partition_epoch=0).partitions
    assert resp.error is Errors.UNKNOWN_TOPIC_OR_PARTITION


def test_alter_partition_should_reject_fenced_brokers() -> None:
    """Kafka: ReplicationControlManagerTest.testAlterPartitionShouldRejectFencedBrokers (version > 1)."""
    ctx = ctx_with(0, 1, 2, 3, 4)
    ctx.create_topic("foo", [(1, 2, 3, 4)])
    records: list = []
    ctx.replication.handle_broker_fenced(3, records)
    ctx.core._append(records)
    assert ctx.partition("foo", 0) == PartitionRegistration((1, 2, 3, 4), (1, 2, 4), 1, 0, 1)
    (resp,) = ctx.alter_partition("foo", 0, 1, [1, 2, 3, 4]).partitions
    assert resp.error is Errors.INELIGIBLE_REPLICA
    records = []
    ctx.replication.handle_broker_unfenced(3, ctx.epoch(3), records)
    ctx.core._append(records)
    (resp,) = ctx.alter_partition("foo", 0, 1, [1, 2, 3, 4]).partitions
    assert (resp.error, resp.leader, resp.leader_epoch, resp.isr, resp.partition_epoch) == (
        Errors.NONE, 1, 0, (1, 2, 3, 4), 2)


def test_alter_partition_should_reject_brokers_with_stale_epoch() -> None:
    """Kafka: ReplicationControlManagerTest.testAlterPartitionShouldRejectBrokersWithStaleEpoch (version >= 3):
    broker 4 re-registered with a new epoch; a request naming its old epoch is INELIGIBLE_REPLICA."""
    ctx = ctx_with(0, 1, 2, 3, 4)
    ctx.create_topic("foo", [(1, 2, 3, 4)])
    old_epochs = {b: ctx.epoch(b) for b in range(5)}
    ctx.alter_partition("foo", 0, 1, [1, 2, 3])
    ctx.fence_brokers({4})
    ctx.core.register_broker(4, "incarnation-4-restarted")
    ctx.unfence_brokers(4)
    assert ctx.epoch(4) != old_epochs[4]
    (resp,) = ctx.alter_partition("foo", 0, 1, [1, 2, 3, 4], epochs=old_epochs).partitions
    assert resp.error is Errors.INELIGIBLE_REPLICA
    (resp,) = ctx.alter_partition("foo", 0, 1, [1, 2, 3, 4],
                                  epochs={**old_epochs, 4: ctx.epoch(4)}).partitions
    assert resp.error is Errors.NONE


def test_alter_partition_should_reject_shutting_down_brokers() -> None:
    """Kafka: ReplicationControlManagerTest.testAlterPartitionShouldRejectShuttingDownBrokers."""
    ctx = ctx_with(0, 1, 2, 3, 4)
    ctx.create_topic("foo", [(1, 2, 3, 4)])
    ctx.alter_partition("foo", 0, 1, [1, 2, 4])
    ctx.heartbeat(3, want_shutdown=True)  # leads nothing: SHUTDOWN_NOW, fenced
    (resp,) = ctx.alter_partition("foo", 0, 1, [1, 2, 3, 4]).partitions
    assert resp.error is Errors.INELIGIBLE_REPLICA
    ctx2 = ctx_with(0, 1, 2, 3, 4)
    ctx2.create_topic("foo", [(1, 2, 3, 4)])
    ctx2.create_topic("bar", [(3, 1)])
    ctx2.alter_partition("foo", 0, 1, [1, 2, 4])
    ctx2.heartbeat(3, want_shutdown=True)  # leads bar-0: CONTROLLED_SHUTDOWN
    assert ctx2.cluster.in_controlled_shutdown(3)
    (resp,) = ctx2.alter_partition("foo", 0, 1, [1, 2, 3, 4]).partitions
    assert resp.error is Errors.INELIGIBLE_REPLICA


def test_duplicate_broker_registration_while_session_valid() -> None:
    """Kafka: ClusterControlManager.registerBroker -- a new incarnation cannot register while the old one's
    session is valid (DUPLICATE_BROKER_REGISTRATION); once it is fenced it can, with a new epoch, fenced."""
    ctx = ctx_with(0, 1)
    reply = ctx.core.register_broker(1, "incarnation-1-new").response
    assert reply.error is Errors.DUPLICATE_BROKER_REGISTRATION
    same = ctx.core.register_broker(1, "incarnation-1").response  # the same incarnation retrying
    assert same.error is Errors.NONE
    ctx.unfence_brokers(1)
    ctx.fence_brokers({1})
    reply = ctx.core.register_broker(1, "incarnation-1-new").response
    assert reply.error is Errors.NONE and reply.epoch == ctx.core.log.end_offset
    registration = ctx.cluster.registration(1)
    assert registration is not None and registration.fenced and registration.epoch == reply.epoch


def test_unclean_election_on_fencing_when_topic_allows_it() -> None:
    """Kafka: generateLeaderAndIsrUpdates with unclean.leader.election.enable=true (and
    ReplicationControlManagerTest.testMaybeTriggerUncleanLeaderElectionForLeaderlessPartitions, "static"):
    the last ISR member fenced => the first acceptable replica leads at once, ISR [it], RECOVERING."""
    ctx = ctx_with(0, 1, 2)
    ctx.create_topic("foo", [(0, 1, 2)], unclean=True)
    ctx.alter_partition("foo", 0, 0, [0])
    ctx.fence_brokers({0})
    p = ctx.partition("foo", 0)
    assert (p.leader, p.isr, p.leader_recovery_state, p.leader_epoch) == (1, (1,), LEADER_RECOVERY_RECOVERING, 1)
    (resp,) = ctx.alter_partition("foo", 0, 1, [1], recovery=LEADER_RECOVERY_RECOVERED).partitions
    assert (resp.error, resp.leader_recovery_state) == (Errors.NONE, LEADER_RECOVERY_RECOVERED)


def test_maybe_elect_unclean_leaders_for_leaderless_partitions() -> None:
    """Kafka: ReplicationControlManagerTest.testMaybeTriggerUncleanLeaderElectionForLeaderlessPartitions
    ("none" and "dynamic_topic")."""
    ctx = ctx_with(0, 1, 2, 3, 4)
    ctx.create_topic("foo", [(1, 2, 4), (1, 3, 4), (0, 2, 4)])
    assert not ctx.replication.are_some_partitions_leaderless()
    ctx.fence_brokers({0, 1, 2, 3, 4})
    assert ctx.replication.are_some_partitions_leaderless()
    for i in range(3):
        assert leader_and_isr(ctx, "foo", i) == (NO_LEADER, (4,))
    ctx.unfence_brokers(2)
    for i in range(3):
        assert leader_and_isr(ctx, "foo", i) == (NO_LEADER, (4,))
    result = ctx.core.maybe_elect_unclean_leaders()
    assert result.response is False and result.batch is None
    ctx.core.set_unclean_leader_election("foo", True)
    result = ctx.core.maybe_elect_unclean_leaders()
    assert result.response is False and result.batch is not None
    assert leader_and_isr(ctx, "foo", 0) == (2, (2,))
    assert leader_and_isr(ctx, "foo", 1) == (NO_LEADER, (4,))
    assert leader_and_isr(ctx, "foo", 2) == (2, (2,))


def test_committed_image_lags_until_commit() -> None:
    """Kafka: brokers see only committed batches -- the delta names each changed partition and broker as of
    its batch; the image moves on commit."""
    ctx = ctx_with(0, 1, 2)
    ctx.create_topic("foo", [(0, 1, 2)])
    ctx.core.commit()
    ctx.fence_brokers({0})
    tp = TopicPartition("foo", 0)
    assert ctx.core.image.leader(tp) == 0
    batches = ctx.core.commit()
    assert ctx.core.image.leader(tp) == 1
    fence_batch = batches[-1]
    assert fence_batch.delta.offset == fence_batch.last_offset == ctx.core.log.committed_offset
    assert fence_batch.delta.partitions[tp].leader == 1
    assert fence_batch.delta.brokers[0].fenced
    assert ctx.core.image.brokers[0].fenced


def test_create_topic_isr_is_active_replicas() -> None:
    """Kafka: ReplicationControlManager.createTopic with a manual assignment (and testCreateTopicsISRInvariants):
    the ISR holds only active replicas, the leader is the first of them; a partition with none is refused."""
    ctx = ControllerTestContext()
    ctx.register_brokers(0, 1, 2, 3)
    ctx.unfence_brokers(2, 3)
    ctx.create_topic("foo", [(1, 2, 3)])
    assert ctx.partition("foo", 0) == PartitionRegistration((1, 2, 3), (2, 3), 2, 0, 0)
    with pytest.raises(KafkaError) as refused:
        ctx.create_topic("bar", [(0, 1)])
    assert refused.value.error is Errors.INVALID_REPLICA_ASSIGNMENT


def test_balance_partition_leaders() -> None:
    """Kafka: ReplicationControlManagerTest.testBalancePartitionLeaders -- a PREFERRED election moves the
    leadership back to replicas[0] only once it is active and in the ISR."""
    ctx = ControllerTestContext()
    ctx.register_brokers(0, 1, 2, 3, 4)
    ctx.unfence_brokers(2, 3, 4)
    ctx.create_topic("foo", [(1, 2, 3), (2, 3, 4), (0, 2, 1)])
    assert ctx.replication.are_partition_leaders_imbalanced()
    ctx.unfence_brokers(1)
    (resp,) = ctx.alter_partition("foo", 0, 2, [1, 2, 3]).partitions
    assert (resp.error, resp.leader, resp.leader_epoch, resp.isr, resp.partition_epoch) == (
        Errors.NONE, 2, 0, (1, 2, 3), 1)
    result = ctx.core.maybe_balance_partition_leaders()
    assert result.batch is not None
    assert result.batch.records == (PartitionChangeRecord(TopicPartition("foo", 0), leader=1),)
    assert ctx.replication.are_partition_leaders_imbalanced()
    assert result.response is False
    ctx.unfence_brokers(0)
    (resp,) = ctx.alter_partition("foo", 2, 2, [0, 2, 1]).partitions
    assert (resp.error, resp.leader, resp.isr, resp.partition_epoch) == (Errors.NONE, 2, (0, 2, 1), 1)
    result = ctx.core.maybe_balance_partition_leaders()
    assert result.batch is not None
    assert result.batch.records == (PartitionChangeRecord(TopicPartition("foo", 2), leader=0),)
    assert not ctx.replication.are_partition_leaders_imbalanced()
    assert result.response is False
