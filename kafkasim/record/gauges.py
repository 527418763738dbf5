"""The gauges an operator watches, sampled every ``sample_interval`` into the ``timeseries`` table.

Tidy rows (time_ms, metric, entity, value); metric names are Kafka's where Kafka has one. An entity names
what the gauge is about: a broker (``broker-<id>``), a part of one (``broker-<id>/<part>``), a partition
(``<topic>-<p>``), one replica of a partition (``<topic>-<p>/replica-<broker id>``) or a producer.

Per broker, every broker of the run (entity ``broker-<id>``):

* ``RequestQueueSize`` (includes requests of processors blocked on a full queue); ``ResponseQueueSize``
  per network processor (entity ``broker-<id>/processor-<i>``).
* ``RequestHandlerAvgIdlePercent`` and ``NetworkProcessorAvgIdlePercent``: the idle fraction (0..1) over
  the last interval, from the service time started in it. (Kafka's meter is the same ratio; a service that
  straddles two intervals is counted in the one where it started.) With ``broker.cores``, a thread's wait
  for a core counts as busy too (counted when its work ends): a runnable thread is not idle.
* ``PurgatorySize`` (watch-list entries) and ``NumDelayedOperations`` (ops in the timer) per purgatory
  (entity ``broker-<id>/Produce``, ``broker-<id>/Fetch``).
* ``LeaderCount``, ``UnderReplicatedPartitions`` and ``UnderMinIsrPartitionCount`` (Kafka's
  ``ReplicaManager`` gauges): partitions it leads, and of those, with an ISR smaller than the replica set
  or than ``min.insync.replicas``. Sampled with the partition gauges (below).

Per broker whose run models the disk (a topic sets ``flush.messages`` or ``flush.ms``; entity
``broker-<id>``): Kafka's ``LogFlushStats.LogFlushRateAndTimeMs`` over the last interval as two gauges,
``LogFlushRatePerSec`` (flushes per second) and ``LogFlushTimeMsMean`` (their mean time, waiting for the disk
included; 0 without flushes), and ``DiskUtilization``, the share (0..1) of the interval the disk spent
flushing (simulator-only; a flush counts whole in the interval it was asked for).

Per broker host of a ``cluster:`` (entity ``broker-<id>``): ``NicBytesInPerSec`` and ``NicBytesOutPerSec``,
the bytes its NIC (``cluster.nic``) took on for receiving and sending over the last interval, per second
(simulator-only: compare them with ``cluster.nic``'s bandwidth; a NIC at its bandwidth queues), and
``NicInUtilisation`` / ``NicOutUtilisation``, the same bytes over what the direction's bandwidth could carry
in the interval (0..1: the fraction of the time it was busy, both disciplines being work-conserving; a
message is counted in the interval it joined the NIC, so one interval can read above 1 after a burst).

Per broker whose host's cores are modelled (``broker.cores`` set; entity ``broker-<id>``):
``CpuUtilisation``, the busy core-milliseconds over the last interval divided by ``cores`` x the interval
(0..1, exact: a service time straddling two intervals is split between them), and ``CpuRunQueue``, the mean
number of threads waiting for a core over the interval (simulator-only; Linux's run queue less the threads
running).

Per partition, read from its leader (entity ``<topic>-<p>``): ``HighWatermark``, ``IsrSize``,
``UnderMinIsr`` (0/1) and ``LeaderId`` (the leader's broker id; -1 while the controller's metadata names no
leader and no broker acts as one, as Kafka's metadata reports a leaderless partition). From the controller:
``ElrSize``, how many eligible leader replicas (KIP-966) the partition has (``kafka-topics --describe``'s
``Elr``), written while it has some and once more, 0, when they are gone (no rows: none).

For the cluster (entity ``controller``): ``OfflinePartitionsCount``, the partitions whose registration
names no leader (Kafka's ``KafkaController`` gauge, counted by ``ControllerMetadataMetricsPublisher``:
``!partition.hasLeader()``), read from the controller's state as it appends its records (Kafka's gauge
follows the published image, a commit later). Sampled with the partition gauges. Per replica (entity
``<topic>-<p>/replica-<broker id>``): ``LogEndOffset``, each broker's own LEO (the leader's included);
``ReplicaLogEndOffsetAtLeader``, the leader's view of each follower's LEO (what the HW is computed from;
it lags the follower's own LEO by up to one fetch).

Per producer (entity = its name): ``InFlightRequests``, and ``MetadataAgeMs``: the time since its last
metadata refresh (Kafka's producer metric ``metadata-age``, in ms rather than s), so that the sample time
minus it is when that refresh came back.

Cost: the partition gauges are some ten rows per partition, about 7 ms per sample at 1,000 partitions
(measured on this machine). A run with more than ``PARTITIONS_PER_SAMPLE`` partitions therefore samples
them (and the per-broker partition counts) every ``stride`` samples only, ``stride = ceil(partitions /
PARTITIONS_PER_SAMPLE)``: all partitions at the same instants, so that figures can compare them; the
request-plane gauges keep every sample. Up to ``PARTITIONS_PER_SAMPLE`` partitions nothing changes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

# Partitions sampled at every sample; more every ceil(n / PARTITIONS_PER_SAMPLE) samples (see the module
# doc). Defined with the scenario's limits, which estimate a run's gauge rows with the same rule.
from kafkasim.scenario.limits import partition_sample_stride

if TYPE_CHECKING:
    from kafkasim.broker.disk import Disk
    from kafkasim.broker.records import TopicPartition
    from kafkasim.clients.producer import Producer
    from kafkasim.network.nic import Nic
    from kafkasim.record.recorder import Recorder
    from kafkasim.server.broker_server import BrokerServer
    from kafkasim.sim.host_cpu import HostCpu

CONTROLLER_ENTITY = "controller"


def broker_entity(broker_id: int) -> str:
    return f"broker-{broker_id}"


def replica_entity(partition: str, broker_id: int) -> str:
    return f"{partition}/replica-{broker_id}"


class _BrokerGauges:
    """One broker's sources and the busy times of its previous sample (for the idle ratios)."""

    __slots__ = ("broker", "entity", "processor_entities", "purgatory_entities", "last_handler_busy",
                 "last_processor_busy", "last_flushes", "last_flush_time", "last_disk_busy", "last_cpu_busy",
                 "last_run_queue")

    def __init__(self, broker: BrokerServer) -> None:
        self.broker = broker
        self.entity = broker_entity(broker.broker_id)
        self.processor_entities = [f"{self.entity}/processor-{p.index}" for p in broker.socket_server.processors]
        rm = broker.replica_manager
        # Names only: a restarted broker has new purgatories (read from the ReplicaManager at each sample).
        self.purgatory_entities = [f"{self.entity}/{p.name}" for p in (rm.produce_purgatory, rm.fetch_purgatory)]
        self.last_handler_busy = 0.0
        self.last_processor_busy = 0.0
        self.last_flushes = 0
        self.last_flush_time = 0.0
        self.last_disk_busy = 0.0
        self.last_cpu_busy = 0.0
        self.last_run_queue = 0.0


class _NicGauges:
    """One broker host's NIC and its byte counts at the previous sample."""

    __slots__ = ("entity", "nic", "last_in", "last_out")

    def __init__(self, entity: str, nic: Nic) -> None:
        self.entity = entity
        self.nic = nic
        self.last_in = 0
        self.last_out = 0


class GaugeSampler:
    """Reads every broker (request plane, purgatories, the partitions it leads or follows) and the producers,
    and writes one row per gauge to ``recorder.sample(t, metric, entity, value)``."""

    def __init__(self, brokers: Sequence[BrokerServer], producers: Sequence[Producer], recorder: Recorder, *,
                 partition_stride: int | None = None, nics: Mapping[int, Nic] | None = None,
                 leaderless: Callable[[], Sequence[TopicPartition]] | None = None,
                 elr: Callable[[], Mapping[TopicPartition, int]] | None = None) -> None:
        self.brokers = [_BrokerGauges(b) for b in brokers]
        self._nics = [_NicGauges(broker_entity(b), nic) for b, nic in sorted((nics or {}).items())]
        self.producers = list(producers)
        self._recorder = recorder
        self._leaderless = leaderless
        self._elr = elr
        self._had_elr: set[str] = set()  # partitions with eligible leader replicas at the previous sample
        self._led: set[str] = set()  # the partitions some broker sampled as their leader at this sample
        self._last_t: float | None = None
        self._samples = 0
        self._names: dict[TopicPartition, str] = {}
        # Each replica's entity, per partition name and broker id: made once, not once per sample.
        self._replica_names: dict[str, dict[int, str]] = {}
        for b in brokers:
            for tp in b.replica_manager.partitions:
                self._names.setdefault(tp, str(tp))
            for fetcher in b.fetchers:
                for tp in fetcher.partitions:
                    self._names.setdefault(tp, str(tp))
        self.partition_stride = (partition_sample_stride(len(self._names)) if partition_stride is None
                                 else partition_stride)

    def _name(self, tp: TopicPartition) -> str:
        name = self._names.get(tp)
        if name is None:
            name = self._names[tp] = str(tp)
        return name

    def _replica(self, name: str, broker_id: int) -> str:
        names = self._replica_names.get(name)
        if names is None:
            names = self._replica_names[name] = {}
        entity = names.get(broker_id)
        if entity is None:
            entity = names[broker_id] = replica_entity(name, broker_id)
        return entity

    def sample(self, t: float) -> None:
        partitions_now = self._samples % self.partition_stride == 0
        self._samples += 1
        span = t - self._last_t if self._last_t is not None and t > self._last_t else None
        self._last_t = t
        led = self._led
        led.clear()
        for gauges in self.brokers:
            if gauges.broker.crashed:
                continue  # a dead process reports nothing: its JMX does not answer while it is down
            if partitions_now:
                self._sample_partitions(t, gauges)
            self._sample_request_plane(t, gauges, span)
        recorder = self._recorder
        if partitions_now and self._leaderless is not None:
            offline = self._leaderless()
            recorder.sample(t, "OfflinePartitionsCount", CONTROLLER_ENTITY, float(len(offline)))
            for tp in offline:
                name = self._name(tp)
                if name not in led:  # a deposed leader that has not heard yet still samples itself
                    recorder.sample(t, "LeaderId", name, -1.0)
        if partitions_now and self._elr is not None:
            self._sample_elr(t)
        for producer in self.producers:
            recorder.sample(t, "InFlightRequests", producer.name, float(producer.in_flight))
            recorder.sample(t, "MetadataAgeMs", producer.name, t - producer.metadata_refreshed_ms)
        for g in self._nics:
            now_in, now_out = g.nic.inbound.bytes, g.nic.outbound.bytes
            if span is not None:
                recorder.sample(t, "NicBytesInPerSec", g.entity, (now_in - g.last_in) * 1000.0 / span)
                recorder.sample(t, "NicBytesOutPerSec", g.entity, (now_out - g.last_out) * 1000.0 / span)
                recorder.sample(t, "NicInUtilisation", g.entity,
                     (now_in - g.last_in) / (g.nic.inbound.bandwidth_bytes_per_ms * span))
                recorder.sample(t, "NicOutUtilisation", g.entity,
                     (now_out - g.last_out) / (g.nic.outbound.bandwidth_bytes_per_ms * span))
            g.last_in, g.last_out = now_in, now_out

    def _sample_elr(self, t: float) -> None:
        assert self._elr is not None
        recorder = self._recorder
        now: set[str] = set()
        for tp, size in self._elr().items():
            name = self._name(tp)
            now.add(name)
            recorder.sample(t, "ElrSize", name, float(size))
        for name in sorted(self._had_elr - now):
            recorder.sample(t, "ElrSize", name, 0.0)
        self._had_elr = now

    def _sample_partitions(self, t: float, gauges: _BrokerGauges) -> None:
        recorder = self._recorder
        broker = gauges.broker
        broker_id = broker.broker_id
        rm = broker.replica_manager
        leaders = under_replicated = under_min_isr = 0
        for tp, partition in rm.partitions.items():
            name = self._name(tp)
            if partition.is_leader:
                leaders += 1
                isr = len(partition.isr)
                below_min = partition.is_under_min_isr
                under_replicated += isr < partition.replication_factor
                under_min_isr += below_min
                recorder.sample(t, "HighWatermark", name, float(partition.high_watermark))
                recorder.sample(t, "IsrSize", name, float(isr))
                recorder.sample(t, "UnderMinIsr", name, 1.0 if below_min else 0.0)
                recorder.sample(t, "LeaderId", name, float(broker_id))
                self._led.add(name)
                recorder.sample(t, "LogEndOffset", self._replica(name, broker_id), float(partition.log_end_offset))
                for replica in partition.remote_replicas:
                    recorder.sample(t, "ReplicaLogEndOffsetAtLeader", self._replica(name, replica.broker_id),
                         float(replica.log_end_offset))
            else:
                recorder.sample(t, "LogEndOffset", self._replica(name, broker_id), float(partition.log_end_offset))
        entity = gauges.entity
        recorder.sample(t, "LeaderCount", entity, float(leaders))
        recorder.sample(t, "UnderReplicatedPartitions", entity, float(under_replicated))
        recorder.sample(t, "UnderMinIsrPartitionCount", entity, float(under_min_isr))

    def _sample_request_plane(self, t: float, gauges: _BrokerGauges, span: float | None) -> None:
        recorder = self._recorder
        broker = gauges.broker
        entity = gauges.entity
        rm = broker.replica_manager
        for purgatory, name in zip((rm.produce_purgatory, rm.fetch_purgatory), gauges.purgatory_entities, strict=True):
            recorder.sample(t, "PurgatorySize", name, float(purgatory.watched))
            recorder.sample(t, "NumDelayedOperations", name, float(purgatory.num_delayed))
        channel = broker.request_channel
        handlers = broker.handlers
        processors = broker.socket_server.processors
        recorder.sample(t, "RequestQueueSize", entity, float(channel.request_queue_size))
        for name, size in zip(gauges.processor_entities, channel.response_queue_sizes(), strict=True):
            recorder.sample(t, "ResponseQueueSize", name, float(size))
        handler_busy = handlers.handler_busy_ms
        processor_busy = sum(p.busy_ms for p in processors)
        if span is not None:
            handler_idle = 1.0 - (handler_busy - gauges.last_handler_busy) / (span * handlers.num_io_threads)
            processor_idle = 1.0 - (processor_busy - gauges.last_processor_busy) / (span * len(processors))
            recorder.sample(t, "RequestHandlerAvgIdlePercent", entity, min(1.0, max(0.0, handler_idle)))
            recorder.sample(t, "NetworkProcessorAvgIdlePercent", entity, min(1.0, max(0.0, processor_idle)))
        gauges.last_handler_busy = handler_busy
        gauges.last_processor_busy = processor_busy
        disk = broker.disk
        if disk is not None:
            self._sample_disk(t, gauges, disk, span)
        cpu = broker.cpu
        if cpu is not None:
            self._sample_cpu(t, gauges, cpu, span)

    def _sample_cpu(self, t: float, gauges: _BrokerGauges, cpu: HostCpu, span: float | None) -> None:
        """The host's cores over the last interval: their utilisation and the run queue's mean length."""
        busy, queued = cpu.busy_core_ms, cpu.run_queue_ms
        if span is not None:
            recorder = self._recorder
            recorder.sample(t, "CpuUtilisation", gauges.entity, min(1.0, max(0.0, (busy - gauges.last_cpu_busy) / (cpu.cores * span))))
            recorder.sample(t, "CpuRunQueue", gauges.entity, max(0.0, (queued - gauges.last_run_queue) / span))
        gauges.last_cpu_busy, gauges.last_run_queue = busy, queued

    def _sample_disk(self, t: float, gauges: _BrokerGauges, disk: Disk, span: float | None) -> None:
        """Kafka's ``LogFlushStats.LogFlushRateAndTimeMs`` over the last interval (its rate, flushes per
        second, and the mean time of those flushes, 0 without any) and the disk's utilisation (the share of
        the interval it spent flushing; a flush is counted whole when it is asked for)."""
        flushes, flush_time, busy = disk.flushes, disk.flush_time_ms, disk.busy_ms
        if span is not None:
            recorder = self._recorder
            count = flushes - gauges.last_flushes
            recorder.sample(t, "LogFlushRatePerSec", gauges.entity, count * 1000.0 / span)
            recorder.sample(t, "LogFlushTimeMsMean", gauges.entity, (flush_time - gauges.last_flush_time) / count if count else 0.0)
            recorder.sample(t, "DiskUtilization", gauges.entity, min(1.0, max(0.0, (busy - gauges.last_disk_busy) / span)))
        gauges.last_flushes, gauges.last_flush_time, gauges.last_disk_busy = flushes, flush_time, busy
