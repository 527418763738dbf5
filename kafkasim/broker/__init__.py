"""The simulated leader broker's synchronous core: log, replicas, partition, ReplicaManager, delayed ops.

Plain Python driven by a ``kafkasim.timer.Time``; no SimPy here (Kafka's ``DelayedProduce``, ``DelayedFetch``,
``ReplicaManager``, ``Partition`` and ``UnifiedLog``). Kafka's names, in snake_case, one concept per module:

==========================  =========================================================================
``errors``                  ``Errors`` (Kafka's codes), ``KafkaError`` (an exception carrying one)
``config``                  ``KafkaConfig`` / ``LogConfig``: frozen, with Kafka's defaults
``records``                 ``TopicPartition``, ``RecordBatch`` (a simulated batch: no payload)
``log_offset_metadata``     ``LogOffsetMetadata`` (3.8+ rules), ``UNKNOWN_OFFSET_METADATA``
``log_segment``             ``LogSegment``, ``FetchDataInfo`` (a read's result)
``log``                     ``Log``: append (leader/follower), roll, read bounds, HW, truncation
``leader_epoch_cache``      ``LeaderEpochFileCache`` (epoch -> start offset; diverging-epoch checks)
``replica``                 ``Replica``: the leader's view of one follower
``partition``               ``Partition``: leader epoch, ISR state machine, HW, follower fetch state
``alter_partition``         ``AlterPartitionManager`` protocol, ``LeaderAndIsr``,
                            ``ControllerAlterPartitionManager`` (the controller's decision, in process)
``fetch`` / ``produce``     request/response shapes: ``FetchParams``, ``PartitionData``,
                            ``LogReadResult``, ``PartitionResponse``, ...
``delayed_produce``         ``DelayedProduce`` (acks=all waiting for the HW)
``delayed_fetch``           ``DelayedFetch`` (cases A-H, 3.8+ segment-roll rule)
``fetch_metadata``          ``FetchMetadata``: a fetch request's session fields (KIP-227)
``fetch_session``           ``FetchManager``, the ``FetchContext``s: incremental fetch sessions (KIP-227)
``fetch_session_cache``     ``FetchSessionCache`` and what it caches (``FetchSession``, ``CachedPartition``)
``session_reads``           not Kafka's: the lazy reads of a session's changed partitions
                            (``SessionReader``, ``SessionDelayedFetch``, ``PartitionChanges``)
``action_queue``            ``ActionQueue`` (post-append purgatory checks, end of request)
``replica_manager``         ``ReplicaManager``: produce and fetch paths, partitions, purgatories
``applied_delta``           ``AppliedDelta``, ``FollowerFetchStart``: what ``apply_delta`` did
``metrics``                 ``BrokerMetrics``: ISR expands/shrinks, expirations by purgatory/fetcher
==========================  =========================================================================

How the engine drives it
------------------------
Build::

    config = KafkaConfig(log=LogConfig(min_insync_replicas=2, segment_bytes=...),
                          replica_lag_time_max_ms=30_000)
    rm = ReplicaManager(broker_id, config, time, alter_partition_manager=apm, rng=random.Random(seed))
    rm.make_leader(TopicPartition("t", 0), replicas=[0, 1, 2], isr=[0, 1, 2],
                   leader_epoch=0, partition_epoch=0)        # creates the partition and its Log

``time`` is any object with ``milliseconds() -> int`` (the SimPy clock adapted, or ``ManualTime``). The
purgatories are built on a ``SystemTimer`` over the same time unless passed in; ``rng`` seeds one
segment-jitter stream per partition, named after it (only drawn from when ``segment_jitter_ms > 0``).

Per request (what ``KafkaApis.handle`` does), on a request-handler thread:

* Produce: ``rm.append_records(timeout_ms, required_acks, {tp: [RecordBatch, ...]}, callback)``.
  ``callback({tp: PartitionResponse(error, base_offset, last_offset, log_append_time,
  log_start_offset)})`` runs exactly once: synchronously (acks 0/1, invalid acks, every partition failed),
  or later from a purgatory completion -- possibly inside another request's handling (a follower fetch
  that advanced the HW) or inside ``produce_purgatory.advance_clock()`` (timeout: REQUEST_TIMED_OUT).
  For acks=0 the callback still runs; like KafkaApis, the engine sends no response.
* Fetch: ``rm.fetch_messages(params, [(tp, PartitionData(fetch_offset, log_start_offset, max_bytes,
  current_leader_epoch=-1, last_fetched_epoch=-1)), ...], callback)`` with
  ``params = fetch_params_from_request(config, replica_id, max_wait_ms, min_bytes, max_bytes)``
  (``replica_id >= 0``: follower, LOG_END; ``-1``: consumer, HIGH_WATERMARK). ``callback([(tp,
  LogReadResult), ...])``; each result has ``error``, ``high_watermark``, ``log_start_offset``,
  ``log_end_offset`` (the leader's, captured before the read), ``records`` (whole batches with offsets),
  ``partial_batch`` (a trailing batch cut by the byte limit, or None), ``size_in_bytes`` (bytes sent,
  partial included) and ``diverging_epoch``.
* An incremental session fetch (``FetchManager.new_context`` gave an ``IncrementalFetchContext``):
  ``SessionReader(rm).fetch_session_messages(params, context, callback)`` -- Kafka reads every partition of the
  session; this reads the ones that changed since the session's previous read and gives the same answers.
* Then always ``rm.try_complete_actions()`` (the ``finally`` of ``KafkaApis.handle``): the deferred
  post-append purgatory checks, which typically complete parked follower fetches.

Background work (SimPy processes in ``run/``):

* every ``config.isr_expiration_interval_ms`` (lag / 2): ``rm.maybe_shrink_isr()``;
* the expiration reapers: ``rm.produce_purgatory.advance_clock()`` / ``rm.fetch_purgatory.advance_clock()``
  (gauges: ``.watched`` = PurgatorySize, ``.num_delayed`` = NumDelayedOperations; the timer's
  ``next_expiration_ms`` tells when the next expiry is due);
* AlterPartition: ``Partition`` calls ``apm.submit(tp, LeaderAndIsr, callback)``; the engine answers
  after its modelled latency with ``callback(result)`` where ``result`` is the committed ``LeaderAndIsr``
  or an ``Errors``. ``ControllerAlterPartitionManager.alter_partition(tp, request)`` is the controller's
  decision to reuse (or, with ``auto_complete=True``, the whole thing answered synchronously);
* leadership changes: ``rm.make_follower(...)``, ``rm.stop_replica(tp)``, ``rm.mark_partition_offline(tp)``
  complete parked operations with NOT_LEADER_OR_FOLLOWER / KAFKA_STORAGE_ERROR; ``rm.fenced_brokers``
  holds brokers that are not ISR-eligible.

Counters: ``rm.metrics`` (``isr_expands``, ``isr_shrinks``, ``failed_isr_updates``, ``produce_expires``
(+ ``produce_expires_by_partition``), ``fetch_expires_follower``, ``fetch_expires_consumer``).
Per-partition state for gauges: ``rm.partitions[tp]`` -> ``.high_watermark``, ``.log_end_offset``,
``.isr``, ``.maximal_isr``, ``.get_replica(id).log_end_offset``.

Follower side (the engine's replica fetcher, Kafka's ``ReplicaFetcherThread``): each follower broker keeps a
plain ``Log`` per partition. Per response: ``log.append_as_follower(result.records)`` (offsets and epochs
kept; skip the partial batch), ``log.maybe_update_high_watermark(result.high_watermark)`` (clamped to its own
LEO), next fetch at ``log.log_end_offset`` with ``last_fetched_epoch=log.latest_epoch``. A restarting follower
calls ``log.truncate_to(log.high_watermark)``.

Records are simulated: ``RecordBatch(record_count, size_in_bytes, create_time_ms, batch_id, producer)``;
the leader's log returns it stamped with ``base_offset`` / ``partition_leader_epoch``. ``create_time_ms``
drives the time-based roll (``LogSegment.shouldRoll``); ``batch_id`` lets the engine match a consumed batch to
its send.

Idempotent producers: a batch with ``producer_id >= 0`` carries ``producer_epoch`` and ``base_sequence`` (its
records are ``base_sequence .. last_sequence``, wrapping at Integer.MAX_VALUE). Each log's
``producer_state_manager`` (Kafka's ``ProducerStateManager``) keeps every producer's epoch and last 5
batches. On the leader a retry of one of those 5 (same epoch, same sequence range) is not appended and is
answered NONE with the original offsets (``UnifiedLog.analyzeAndValidateProducerState``); an acks=all
duplicate waits for the HW to pass the original. Otherwise a known producer's batch must continue its
sequence (``OUT_OF_ORDER_SEQUENCE_NUMBER``), a new epoch must start at sequence 0, an older epoch is
``INVALID_PRODUCER_EPOCH``; an unknown producer is accepted at any sequence (Kafka 4.x never answers
``UNKNOWN_PRODUCER_ID`` nor ``DUPLICATE_SEQUENCE_NUMBER``). Follower appends record the same state unchecked,
so a new leader deduplicates what it replicated; truncation rebuilds it; producers idle for
``producer.id.expiration.ms`` are forgotten at the retention check.

Out of scope, with seams: transactions (the LSO is the HW: ``Log.fetch_last_stable_offset_metadata``),
fetch from follower (``FetchParams.fetch_only_leader``), quotas (no throttling in ``DelayedFetch`` /
``read_from_log``), tiered storage,
DeleteRecords / ShareFetch purgatories (``DelayedOperations``), retention other than the log start offset.
"""

from kafkasim.broker.alter_partition import (
    AlterPartitionManager,
    ControllerAlterPartitionManager,
    LeaderAndIsr,
)
from kafkasim.broker.config import KafkaConfig, LogConfig
from kafkasim.broker.errors import Errors, KafkaError
from kafkasim.broker.fetch import FetchParams, LogReadResult, PartitionData, fetch_params_from_request
from kafkasim.broker.log import UNKNOWN_OFFSET_METADATA, FetchIsolation, Log, LogOffsetMetadata
from kafkasim.broker.partition import Partition
from kafkasim.broker.produce import PartitionResponse
from kafkasim.broker.records import RecordBatch, TopicPartition
from kafkasim.broker.replica import Replica
from kafkasim.broker.replica_manager import ReplicaManager

__all__ = [
    "UNKNOWN_OFFSET_METADATA",
    "AlterPartitionManager",
    "KafkaConfig",
    "ControllerAlterPartitionManager",
    "Errors",
    "FetchIsolation",
    "FetchParams",
    "KafkaError",
    "LeaderAndIsr",
    "Log",
    "LogConfig",
    "LogOffsetMetadata",
    "LogReadResult",
    "Partition",
    "PartitionData",
    "PartitionResponse",
    "RecordBatch",
    "Replica",
    "ReplicaManager",
    "TopicPartition",
    "fetch_params_from_request",
]
