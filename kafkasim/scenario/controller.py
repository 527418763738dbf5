"""The `controller:` section: Kafka's KRaft controller, one active controller for the whole run.

Every run has one: brokers register and heartbeat to it (BrokerLifecycleManager), it fences a broker whose
heartbeats stop for `broker.session.timeout.ms` (BrokerHeartbeatManager), elects leaders
(PartitionChangeBuilder), answers the leaders' AlterPartition requests (ReplicationControlManager) and
commits each decision to the metadata log after `controller.quorum.append.linger.ms`; every broker applies
the committed changes after a propagation latency (BrokerMetadataPublisher -> ReplicaManager.applyDelta).
The controller's own failover (a controller quorum electing a new active controller) is not simulated.
"""

from __future__ import annotations

from pydantic import Field

from kafkasim.scenario.base import ScenarioModel
from kafkasim.scenario.distributions import DurationDistribution, DurationLogNormal, constant_ms
from kafkasim.scenario.units import KafkaMs


class ControllerConfig(ScenarioModel):
    """Kafka's controller configs and features (Kafka 4.3.1's defaults) and the simulator's latencies to and
    from it."""

    broker_session_timeout_ms: KafkaMs = Field(default=9000, alias="broker.session.timeout.ms", ge=1)
    """A broker whose last heartbeat is older than this is fenced: it leaves every ISR, and the partitions it
    led get a new leader from the ISR (BrokerHeartbeatManager.hasValidSession)."""
    controller_quorum_append_linger_ms: KafkaMs = Field(default=25, alias="controller.quorum.append.linger.ms", ge=0)
    """How long the controller gathers metadata records before writing them as one batch; a decision takes
    effect when its batch is committed (QuorumConfig.DEFAULT_QUORUM_LINGER_MS)."""
    unclean_leader_election_interval_ms: KafkaMs = Field(
        default=300_000, alias="unclean.leader.election.interval.ms", ge=1
    )
    """How often the controller retries an unclean election for leaderless partitions whose topic allows it
    (the periodic task QuorumController.registerElectUnclean, from the controller's activation)."""
    auto_leader_rebalance_enable: bool = Field(default=True, alias="auto.leader.rebalance.enable")
    """Move leadership back to each partition's preferred (first) replica once it is in the ISR again."""
    leader_imbalance_check_interval_seconds: int = Field(
        default=300, alias="leader.imbalance.check.interval.seconds", ge=1, le=2**31 - 1
    )
    """How often leadership is moved back to preferred replicas (seconds, as Kafka's key says; the periodic task
    QuorumController.registerElectPreferred, from the controller's activation)."""
    eligible_leader_replicas_version: int = Field(default=1, alias="eligible.leader.replicas.version", ge=0, le=1)
    """Kafka's feature of that name (KIP-966), set when the cluster is formatted: 1, the default since Kafka
    4.1 -- replicas that leave the ISR while it is below min.insync.replicas stay *eligible leader replicas*
    and one of them is elected when the ISR empties (PartitionChangeBuilder); 0, Kafka 4.0's default -- the
    last ISR member stays in the ISR and the partition waits offline for it (or for an unclean election)."""
    link_latency: DurationDistribution = Field(default_factory=lambda: DurationLogNormal(median=0.5, p99=2.0))
    """Simulator-only: one-way latency between a broker and the controller, drawn per message (heartbeats,
    registrations, AlterPartition requests and their answers)."""
    metadata_propagation: DurationDistribution = Field(default_factory=lambda: constant_ms(2.0))
    """Simulator-only: from a batch's commit until a broker's metadata loader has it, drawn per broker per
    batch (Kafka: each broker's KRaft client fetches the metadata log from the controller, one round trip or
    two, and hands the committed batches to its MetadataLoader)."""
    metadata_apply: DurationDistribution = Field(default_factory=lambda: constant_ms(0.0))
    """Simulator-only: how long a broker takes to apply a committed delta that moves a leadership it hosts
    (BrokerMetadataPublisher -> ReplicaManager.applyDelta: makeLeader / makeFollower, fetchers removed and
    added), drawn per broker per such delta. Meanwhile the broker's partitions keep their old state, and it
    reports the delta's offset to the controller only once it is applied."""
