"""Ported from Kafka's ``BrokerHeartbeatManagerTest`` (session timeout 10 ms, ``MockTime`` -> ``ManualTime``)."""

from __future__ import annotations

import pytest

from kafkasim.controller.broker_heartbeat_manager import (
    BrokerControlState,
    BrokerControlStates,
    BrokerHeartbeatManager,
    BrokerHeartbeatRequest,
)
from kafkasim.timer.time import ManualTime

FENCED = BrokerControlState.FENCED
UNFENCED = BrokerControlState.UNFENCED
CONTROLLED_SHUTDOWN = BrokerControlState.CONTROLLED_SHUTDOWN
SHUTDOWN_NOW = BrokerControlState.SHUTDOWN_NOW


def new_manager() -> tuple[BrokerHeartbeatManager, ManualTime]:
    time = ManualTime()
    return BrokerHeartbeatManager(time, 10), time


def test_has_valid_session() -> None:
    """Kafka: BrokerHeartbeatManagerTest.testHasValidSession (valid while last contact + timeout >= now)."""
    manager, time = new_manager()
    assert not manager.has_valid_session(0)
    manager.touch(0, False, 0)
    time.sleep(5)
    manager.touch(1, False, 0)
    manager.touch(2, False, 0)
    assert manager.has_valid_session(0)
    assert manager.has_valid_session(1)
    assert manager.has_valid_session(2)
    assert not manager.has_valid_session(3)
    time.sleep(5)
    assert manager.has_valid_session(0)  # exactly at last contact + timeout: still valid (>=)
    time.sleep(1)
    assert not manager.has_valid_session(0)
    assert manager.has_valid_session(1)
    assert manager.has_valid_session(2)
    manager.remove(2)
    assert not manager.has_valid_session(2)
    manager.remove(1)
    assert not manager.has_valid_session(1)


def test_find_one_stale_broker() -> None:
    """Kafka: BrokerHeartbeatManagerTest.testFindOneStaleBroker -- one stale broker at a time, oldest first."""
    manager, time = new_manager()
    manager.touch(0, False, 0)
    time.sleep(5)
    manager.touch(1, False, 0)
    time.sleep(1)
    manager.touch(2, False, 0)
    assert [b.id for b in manager.unfenced()] == [0, 1, 2]
    assert manager.find_one_stale_broker() is None
    time.sleep(5)
    assert manager.find_one_stale_broker() == 0
    manager.fence(0)
    assert manager.find_one_stale_broker() is None
    assert [b.id for b in manager.unfenced()] == [1, 2]
    time.sleep(20)
    assert manager.find_one_stale_broker() == 1
    manager.fence(1)
    assert manager.find_one_stale_broker() == 2
    manager.fence(2)
    assert manager.find_one_stale_broker() is None
    assert manager.unfenced() == []


def test_stale_brokers_go_in_order_of_last_contact() -> None:
    """Kafka 4.0's BrokerHeartbeatManagerTest.testNextCheckTimeNs, without nextCheckTimeNs (Kafka 4.3 checks
    periodically instead): brokers touched at 0, 2, 3, 4 ms go stale one after the other."""
    manager, time = new_manager()
    manager.touch(0, False, 0)
    time.sleep(2)
    manager.touch(1, False, 0)
    time.sleep(1)
    manager.touch(2, False, 0)
    time.sleep(1)
    manager.touch(3, False, 0)
    assert manager.find_one_stale_broker() is None
    time.sleep(6)
    assert manager.find_one_stale_broker() is None  # 10 ms: broker 0's session is still valid
    time.sleep(1)
    assert manager.find_one_stale_broker() == 0
    manager.fence(0)
    assert manager.find_one_stale_broker() is None  # broker 1: 2 + 10 >= 11
    time.sleep(3)
    assert manager.find_one_stale_broker() == 1
    manager.fence(1)
    assert manager.find_one_stale_broker() == 2
    manager.fence(2)
    assert manager.find_one_stale_broker() is None  # broker 3: 4 + 10 >= 14


def test_lowest_active_offset() -> None:
    """Kafka: BrokerHeartbeatManagerTest.testUsableBrokerIterator (the lowestActiveOffset part): fenced brokers
    and brokers in controlled shutdown are not active; a fenced broker cannot enter controlled shutdown."""
    manager, _ = new_manager()
    manager.touch(0, False, 100)
    manager.touch(1, False, 100)
    manager.touch(2, False, 98)
    manager.touch(3, False, 100)
    manager.touch(4, True, 100)
    assert manager.lowest_active_offset() == 98
    manager.update_controlled_shutdown_offset(2, 0)
    assert manager.lowest_active_offset() == 100
    with pytest.raises(RuntimeError):
        manager.update_controlled_shutdown_offset(4, 0)
    manager.touch(4, False, 100)
    manager.update_controlled_shutdown_offset(4, 0)
    assert [b.id for b in manager.active()] == [0, 1, 3]


def req(**kwargs: object) -> BrokerHeartbeatRequest:
    return BrokerHeartbeatRequest(broker_id=0, broker_epoch=0, **kwargs)  # type: ignore[arg-type]


def test_calculate_next_broker_state() -> None:
    """Kafka: BrokerHeartbeatManagerTest.testCalculateNextBrokerState."""
    manager, _ = new_manager()
    manager.touch(0, True, 100)
    manager.touch(1, False, 98)
    manager.touch(2, False, 100)
    manager.touch(3, False, 100)
    manager.touch(4, True, 100)
    manager.touch(5, False, 99)
    manager.update_controlled_shutdown_offset(5, 99)
    assert manager.lowest_active_offset() == 98

    calc = manager.calculate_next_broker_state
    assert calc(0, req(want_shutdown=True), 100, False) == BrokerControlStates(FENCED, SHUTDOWN_NOW)
    assert calc(0, req(want_fence=False, current_metadata_offset=100), 100, False) == BrokerControlStates(
        FENCED, UNFENCED)
    assert calc(0, req(want_fence=False, current_metadata_offset=50), 100, False) == BrokerControlStates(
        FENCED, FENCED)
    assert calc(0, req(want_fence=True), 100, False) == BrokerControlStates(FENCED, FENCED)

    assert calc(1, req(want_shutdown=True), 100, True) == BrokerControlStates(UNFENCED, CONTROLLED_SHUTDOWN)
    assert calc(1, req(want_shutdown=True), 100, False) == BrokerControlStates(UNFENCED, SHUTDOWN_NOW)
    assert calc(1, req(want_fence=False), 100, False) == BrokerControlStates(UNFENCED, UNFENCED)

    assert calc(5, req(want_shutdown=True), 100, True) == BrokerControlStates(
        CONTROLLED_SHUTDOWN, CONTROLLED_SHUTDOWN)
    # Broker 1 (offset 98) has not caught up to the shutdown offset 99 yet.
    assert calc(5, req(want_shutdown=True), 100, False) == BrokerControlStates(
        CONTROLLED_SHUTDOWN, CONTROLLED_SHUTDOWN)
    manager.fence(1)
    assert calc(5, req(want_shutdown=True), 100, False) == BrokerControlStates(CONTROLLED_SHUTDOWN, SHUTDOWN_NOW)
    assert calc(5, req(want_shutdown=True), 100, True) == BrokerControlStates(
        CONTROLLED_SHUTDOWN, CONTROLLED_SHUTDOWN)


def test_unfenced_want_fence_and_shutdown() -> None:
    """Kafka: calculateNextBrokerState, UNFENCED with wantFence: FENCED, or SHUTDOWN_NOW with wantShutDown."""
    manager, _ = new_manager()
    manager.touch(0, False, 10)
    assert manager.calculate_next_broker_state(0, req(want_fence=True), 0, True).next is FENCED
    assert manager.calculate_next_broker_state(0, req(want_fence=True, want_shutdown=True), 0, True).next \
        is SHUTDOWN_NOW


def test_fenced_touch_leaves_controlled_shutdown() -> None:
    """Kafka: BrokerHeartbeatManager.touch -- "If a broker is fenced, it leaves controlled shutdown"."""
    manager, _ = new_manager()
    manager.touch(0, False, 10)
    manager.maybe_update_controlled_shutdown_offset(0, 10)
    manager.maybe_update_controlled_shutdown_offset(0, 20)  # the first offset sticks
    state = manager.state(0)
    assert state is not None and state.controlled_shutdown_offset == 10
    manager.touch(0, True, 10)
    assert state.controlled_shutdown_offset == -1
    assert manager.current_broker_state(state) is FENCED
