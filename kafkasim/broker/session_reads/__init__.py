"""Lazy fetch-session reads: the simulator's speed machinery for incremental fetch sessions (KIP-227), beside
Kafka's classes as ``purgatory.purgatory_timer`` sits beside ``timer.system_timer``. Not Kafka's algorithm.

Kafka's ``IncrementalFetchContext.foreachPartition`` hands ``ReplicaManager.fetchMessages`` every partition
of the session, and the ``DelayedFetch`` it may park walks them all at every check. Here an incremental
fetch reads only the partitions that may answer differently from the session's previous read, and gives
the same answers (tests/broker/test_session_reads.py and tests/engine/test_session_reads_whole_runs.py
compare it with Kafka's walk):

==========================  =========================================================================
``partition_changes``       ``PartitionChanges``: which hosted partitions changed, in order
``fetch_clock``             ``FetchClock``: the time of a session's latest read, which the replicas of
                            its quiet partitions take as their last fetch and caught-up times
``session_state``           ``SessionReads``: what a ``FetchSession`` keeps for the shortcut (its one
                            reference, ``FetchSession.reads``)
``session_reader``          ``SessionReader``: the read of a session's changed partitions
                            (``fetch_session_messages``), in place of Kafka's ``fetchMessages`` over all
``session_delayed_fetch``   ``SessionDelayedFetch``: the DelayedFetch such a read parks
==========================  =========================================================================

Nothing here is imported by ``ReplicaManager`` except ``PartitionChanges`` (which the plain ``DelayedFetch``
uses too); ``KafkaApis`` chooses the shortcut (``SessionReader``) or Kafka's walk per request.
"""
