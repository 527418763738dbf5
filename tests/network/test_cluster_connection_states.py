"""ClusterConnectionStates against Kafka's own ClusterConnectionStatesTest (clients/src/test/java/org/apache/
kafka/clients/ClusterConnectionStatesTest.java): each test here rebuilds the Kafka test it names, with Kafka's
settings (reconnect.backoff.ms 10 s up to 60 s, socket.connection.setup.timeout.ms 10 s up to 127 s).

Not rebuilt, because the simulator does not model what they test: testAuthorizationFailed (authentication),
testThrottled (quotas), testSingleIP / testMultipleIPs / testHostResolveChange / testNodeWithNewHostname /
testSkipLastAttemptedIp (DNS), testIsPreparingConnection and the checkingApiVersions half of
testExponentialReconnectBackoff (no ApiVersions exchange).
"""

from __future__ import annotations

import math
import random

import pytest

from kafkasim.network.cluster_connection_states import (
    CONNECTING,
    DISCONNECTED,
    READY,
    ClusterConnectionStates,
    ConnectionConfig,
)

RECONNECT_BACKOFF_MS = 10 * 1000
RECONNECT_BACKOFF_MAX = 60 * 1000
CONNECTION_SETUP_TIMEOUT_MS = 10 * 1000
CONNECTION_SETUP_TIMEOUT_MAX_MS = 127 * 1000
JITTER = 0.2
NODE1, NODE2, NODE3 = 1001, 2002, 3003


class MockTime:
    def __init__(self) -> None:
        self.now = 0.0

    def sleep(self, ms: float) -> None:
        self.now += ms


@pytest.fixture
def time() -> MockTime:
    return MockTime()


@pytest.fixture
def states() -> ClusterConnectionStates:
    config = ConnectionConfig(RECONNECT_BACKOFF_MS, RECONNECT_BACKOFF_MAX, CONNECTION_SETUP_TIMEOUT_MS,
                              CONNECTION_SETUP_TIMEOUT_MAX_MS)
    return ClusterConnectionStates(config, random.Random(1))


def _near(expected: float, actual: float, delta: float) -> bool:
    return abs(expected - actual) <= delta


def test_cluster_connection_state_changes(states: ClusterConnectionStates, time: MockTime) -> None:
    """testClusterConnectionStateChanges"""
    assert states.can_connect(NODE1, time.now)
    assert states.connection_delay(NODE1, time.now) == 0

    states.connecting(NODE1, time.now)
    assert states.connection_state(NODE1) == CONNECTING
    assert states.is_connecting(NODE1)
    assert not states.is_ready(NODE1, time.now)
    assert not states.is_blacked_out(NODE1, time.now)
    assert not states.has_ready_nodes(time.now)
    assert _near(CONNECTION_SETUP_TIMEOUT_MS, states.connection_delay(NODE1, time.now),
                 CONNECTION_SETUP_TIMEOUT_MS * JITTER)

    time.sleep(100)
    states.ready(NODE1)
    assert states.connection_state(NODE1) == READY
    assert states.is_ready(NODE1, time.now)
    assert states.has_ready_nodes(time.now)
    assert not states.is_connecting(NODE1)
    assert not states.is_blacked_out(NODE1, time.now)
    assert states.connection_delay(NODE1, time.now) == math.inf  # Long.MAX_VALUE

    time.sleep(15000)
    states.disconnected(NODE1, time.now)
    assert states.connection_state(NODE1) == DISCONNECTED
    assert states.is_disconnected(NODE1)
    assert states.is_blacked_out(NODE1, time.now)
    assert not states.is_connecting(NODE1)
    assert not states.has_ready_nodes(time.now)
    assert not states.can_connect(NODE1, time.now)

    # After disconnecting, a backoff of reconnect.backoff.ms (+-20%).
    current_backoff = states.connection_delay(NODE1, time.now)
    assert _near(RECONNECT_BACKOFF_MS, current_backoff, RECONNECT_BACKOFF_MS * JITTER)
    time.sleep(current_backoff + 1)
    assert states.can_connect(NODE1, time.now)


def test_multiple_node_connection_states(states: ClusterConnectionStates, time: MockTime) -> None:
    """testMultipleNodeConnectionStates"""
    assert states.can_connect(NODE1, time.now) and states.can_connect(NODE2, time.now)
    assert not states.has_ready_nodes(time.now)

    states.connecting(NODE2, time.now)
    assert not states.has_ready_nodes(time.now)
    time.sleep(1000)
    states.ready(NODE2)
    assert states.has_ready_nodes(time.now)

    states.connecting(NODE1, time.now)
    assert states.has_ready_nodes(time.now)
    time.sleep(1000)
    states.ready(NODE1)
    assert states.has_ready_nodes(time.now)

    time.sleep(12000)
    states.disconnected(NODE2, time.now)
    assert states.has_ready_nodes(time.now)
    assert states.is_blacked_out(NODE2, time.now)
    assert not states.is_blacked_out(NODE1, time.now)
    time.sleep(states.connection_delay(NODE2, time.now))
    # By the time node 1 disconnects, node 2 is no longer blacked out.
    states.disconnected(NODE1, time.now + 1)
    assert states.is_blacked_out(NODE1, time.now)
    assert not states.is_blacked_out(NODE2, time.now)
    assert not states.has_ready_nodes(time.now)


def test_remove_node(states: ClusterConnectionStates, time: MockTime) -> None:
    """testRemoveNode"""
    states.connecting(NODE1, time.now)
    time.sleep(1000)
    states.ready(NODE1)
    time.sleep(10000)
    states.disconnected(NODE1, time.now)
    # Removing a disconnected, blacked-out node resets every block.
    states.remove(NODE1)
    assert states.can_connect(NODE1, time.now)
    assert not states.is_blacked_out(NODE1, time.now)
    assert states.connection_delay(NODE1, time.now) == 0


def test_max_reconnect_backoff(states: ClusterConnectionStates, time: MockTime) -> None:
    """testMaxReconnectBackoff"""
    effective_max = round(RECONNECT_BACKOFF_MAX * (1 + JITTER))
    states.connecting(NODE1, time.now)
    time.sleep(1000)
    states.disconnected(NODE1, time.now)
    for _ in range(100):
        backoff = states.connection_delay(NODE1, time.now)
        assert backoff <= effective_max
        assert not states.can_connect(NODE1, time.now)
        time.sleep(backoff + 1)
        assert states.can_connect(NODE1, time.now)
        states.connecting(NODE1, time.now)
        time.sleep(10)
        states.disconnected(NODE1, time.now)


def test_exponential_reconnect_backoff(states: ClusterConnectionStates, time: MockTime) -> None:
    """testExponentialReconnectBackoff (verifyReconnectExponentialBackoff(false); the true half goes through
    CHECKING_API_VERSIONS, not modelled)"""
    max_exp = math.log(RECONNECT_BACKOFF_MAX / max(RECONNECT_BACKOFF_MS, 1)) / math.log(2)
    states.remove(NODE1)
    for i in range(10):
        states.connecting(NODE1, time.now)
        states.disconnected(NODE1, time.now)
        expected = round(2 ** min(i, max_exp) * RECONNECT_BACKOFF_MS)
        current = states.connection_delay(NODE1, time.now)
        assert _near(expected, current, JITTER * expected), i
        time.sleep(states.connection_delay(NODE1, time.now) + 1)


def test_exponential_connection_setup_timeout(states: ClusterConnectionStates, time: MockTime) -> None:
    """testExponentialConnectionSetupTimeout"""
    assert states.can_connect(NODE1, time.now)
    n = 0
    while n <= math.log(CONNECTION_SETUP_TIMEOUT_MAX_MS / CONNECTION_SETUP_TIMEOUT_MS) / math.log(2):
        states.connecting(NODE1, time.now)
        assert NODE1 in states.connecting_nodes()
        expected = CONNECTION_SETUP_TIMEOUT_MS * 2**n
        assert _near(expected, states.connection_setup_timeout_ms(NODE1), expected * JITTER), n
        states.disconnected(NODE1, time.now)
        assert NODE1 not in states.connecting_nodes()
        n += 1

    # The upper bound.
    states.connecting(NODE1, time.now)
    assert _near(CONNECTION_SETUP_TIMEOUT_MAX_MS, states.connection_setup_timeout_ms(NODE1),
                 CONNECTION_SETUP_TIMEOUT_MAX_MS * JITTER)
    assert NODE1 in states.connecting_nodes()

    # READY resets it to the initial value.
    states.ready(NODE1)
    assert _near(CONNECTION_SETUP_TIMEOUT_MS, states.connection_setup_timeout_ms(NODE1),
                 CONNECTION_SETUP_TIMEOUT_MS * JITTER)
    assert NODE1 not in states.connecting_nodes()
    states.disconnected(NODE1, time.now)

    # A disconnect after READY does not grow it.
    states.connecting(NODE1, time.now)
    assert _near(CONNECTION_SETUP_TIMEOUT_MS, states.connection_setup_timeout_ms(NODE1),
                 CONNECTION_SETUP_TIMEOUT_MS * JITTER)
    assert NODE1 in states.connecting_nodes()


def test_timed_out_connections(states: ClusterConnectionStates, time: MockTime) -> None:
    """testTimedOutConnections"""
    states.connecting(NODE1, time.now)
    states.connecting(NODE2, time.now)
    assert states.nodes_with_connection_setup_timeout(time.now) == []

    time.sleep(CONNECTION_SETUP_TIMEOUT_MS / 2)
    states.connecting(NODE3, time.now)

    # Beyond the setup timeout (+ the largest jitter) of the first two.
    time.sleep(int(CONNECTION_SETUP_TIMEOUT_MS / 2 + CONNECTION_SETUP_TIMEOUT_MS * JITTER))
    assert sorted(states.nodes_with_connection_setup_timeout(time.now)) == [NODE1, NODE2]
    states.disconnected(NODE1, time.now)
    states.disconnected(NODE2, time.now)

    time.sleep(int(CONNECTION_SETUP_TIMEOUT_MS / 2 + CONNECTION_SETUP_TIMEOUT_MS * JITTER))
    assert states.nodes_with_connection_setup_timeout(time.now) == [NODE3]
    states.disconnected(NODE3, time.now)
    assert states.nodes_with_connection_setup_timeout(time.now) == []


def test_the_setup_timeout_is_strictly_exceeded_and_asked_only_of_a_connecting_node(
        states: ClusterConnectionStates) -> None:
    """isConnectionSetupTimeout: ``now - lastConnectAttemptMs > connectionSetupTimeoutMs``; IllegalStateException
    for a node not CONNECTING."""
    states.connecting(NODE1, 0.0)
    timeout = states.connection_setup_timeout_ms(NODE1)
    assert not states.is_connection_setup_timeout(NODE1, timeout)
    assert states.is_connection_setup_timeout(NODE1, timeout + 1)
    states.ready(NODE1)
    with pytest.raises(ValueError, match="not in connecting state"):
        states.is_connection_setup_timeout(NODE1, timeout + 1)


def test_without_a_backoff_range_nothing_is_drawn() -> None:
    """The replica fetcher's NetworkClient has reconnect.backoff.ms = reconnect.backoff.max.ms = 0
    (BrokerBlockingSender): ExponentialBackoff then returns the constant without a jitter draw, and a node may
    connect again at once."""
    rng = random.Random(5)
    before = rng.getstate()
    states = ClusterConnectionStates(ConnectionConfig(0, 0, 10_000, 10_000), rng)
    states.connecting(NODE1, 0.0)
    states.disconnected(NODE1, 3.0)
    assert states.can_connect(NODE1, 3.0) and states.connection_delay(NODE1, 3.0) == 0
    assert states.connection_setup_timeout_ms(NODE1) == 10_000
    assert rng.getstate() == before
