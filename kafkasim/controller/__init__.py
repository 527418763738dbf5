"""The KRaft controller of a cluster, with Kafka's class names.

SimPy-free core (unit-tested with ``kafkasim.timer.ManualTime``, like Kafka's ``MockTime``):

* ``broker_heartbeat_manager`` -- ``BrokerHeartbeatManager``: sessions, stale brokers, the broker state
  machine (``calculateNextBrokerState``).
* ``cluster_control_manager`` -- ``ClusterControlManager``: registrations and broker epochs.
* ``replication_control_manager`` -- ``ReplicationControlManager``: topics, what fencing / unfencing /
  controlled shutdown do to leaders and ISRs, AlterPartition, unclean elections.
* ``partition_change_builder`` -- ``PartitionChangeBuilder``: leader election and the change record.
* ``records`` / ``metadata_log`` -- the metadata records, the log of atomic batches and the committed image.
* ``controller_core`` -- one method per controller write event over all of the above.
* ``striped_replica_placer`` -- ``StripedReplicaPlacer``: where a new topic's replicas go.

On SimPy: ``quorum_controller`` -- ``QuorumController``: the stale-broker timer, the append linger and the
delivery of committed deltas to subscribed brokers.
"""
