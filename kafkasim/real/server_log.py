"""What the nodes' server.logs say happened: brokers registered, unfenced, fenced, put in controlled shutdown,
leaders elected uncleanly or from the ELR (the controller's), and when each broker took a leadership (the
brokers').

The controller logs at INFO (``ReplicationControlManager``, ``PartitionChangeBuilder``):
``Fencing broker 2 at epoch 18 because its session has timed out.`` and ``Setting new leader for topicId X, partition 0 to 1
using an unclean election``. Lines carry epoch-ms timestamps (kafkasim.real's log4j2 pattern
``[%d{UNIX_MILLIS}] %p %m (%c)``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

_TIME = re.compile(r"^\[(\d{10,16})\]")
_FENCE = re.compile(r"Fencing broker (\d+)(?: at epoch \d+)? because its session has timed out")
_UNCLEAN = re.compile(r"Setting new leader for topicId (\S+), partition (\d+) to (-?\d+) using an unclean election")
_ELR = re.compile(r"Setting new leader for topicId (\S+), partition (\d+) to (-?\d+) using ELR")
_SHUTDOWN = re.compile(r"enterControlledShutdown\[(\d+)\]")
# ClusterControlManager.registerBroker / BrokerHeartbeatManager (QuorumController, INFO), as Kafka 4.3.1 words them:
# "Registering a new incarnation of broker 2. Previous incarnation ID was X; new incarnation ID is Y. ..." and
# "The request from broker 2 to unfence has been granted because it has caught up with the offset of its register
# broker record 96."
_REGISTERED = re.compile(r"Registering a new incarnation of broker (\d+)\.")
_UNFENCED = re.compile(r"The request from broker (\d+) to unfence has been granted")
# state.change.logger, ReplicaManager.applyLocalLeadersDelta -> Partition.makeLeader:
# "[Broker id=1] Leader orders-0 with topic id Some(X) starts at leader epoch 1 from offset 1976 ..."
_LEADER_START = re.compile(r"\[Broker id=(\d+)\] Leader (\S+)-(\d+) with topic id .* starts at leader epoch (\d+)")


@dataclass
class ControllerEvents:
    fenced: list[tuple[float, int]] = field(default_factory=list)
    """(ms since time 0, broker id) of every fence for a session timeout."""
    unclean: list[tuple[float, str, int, int]] = field(default_factory=list)
    """(ms, topic id, partition, new leader) of every unclean election."""
    elr: list[tuple[float, str, int, int]] = field(default_factory=list)
    """(ms, topic id, partition, new leader) of every election from the eligible leader replicas (KIP-966)."""
    shutdown: list[tuple[float, int]] = field(default_factory=list)
    """(ms, broker id) of every controlled shutdown the controller acted on (ReplicationControlManager's
    enterControlledShutdown moves the broker's leaderships in that event)."""
    registered: list[tuple[float, int]] = field(default_factory=list)
    """(ms, broker id) of every registration of a new incarnation (a broker's start or restart)."""
    unfenced: list[tuple[float, int]] = field(default_factory=list)
    """(ms, broker id) of every unfence the controller granted (a registered broker caught up)."""


@dataclass(frozen=True)
class LeaderStart:
    """A broker took a partition's leadership: it applied the change (``Partition.makeLeader``)."""
    at_ms: float
    broker: int
    topic: str
    partition: int
    epoch: int


def leader_starts(path: Path, broker: int, origin_epoch_ms: float) -> list[LeaderStart]:
    """Every leadership ``broker``'s server.log says it took (its state.change.logger lines)."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        stamp = _TIME.match(line)
        if stamp is None or (m := _LEADER_START.search(line)) is None or int(m.group(1)) != broker:
            continue
        found.append(LeaderStart(float(stamp.group(1)) - origin_epoch_ms, broker, m.group(2), int(m.group(3)),
                                 int(m.group(4))))
    return found


def controller_events(path: Path, origin_epoch_ms: float) -> ControllerEvents:
    events = ControllerEvents()
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return events
    for line in lines:
        stamp = _TIME.match(line)
        if stamp is None:
            continue
        t = float(stamp.group(1)) - origin_epoch_ms
        if (m := _FENCE.search(line)) is not None:
            events.fenced.append((t, int(m.group(1))))
        elif (m := _UNCLEAN.search(line)) is not None:
            events.unclean.append((t, m.group(1), int(m.group(2)), int(m.group(3))))
        elif (m := _ELR.search(line)) is not None:
            events.elr.append((t, m.group(1), int(m.group(2)), int(m.group(3))))
        elif (m := _SHUTDOWN.search(line)) is not None:
            events.shutdown.append((t, int(m.group(1))))
        elif (m := _REGISTERED.search(line)) is not None:
            events.registered.append((t, int(m.group(1))))
        elif (m := _UNFENCED.search(line)) is not None:
            events.unfenced.append((t, int(m.group(1))))
    return events
