"""``reread_from_log``: a parked fetch's completion read, reusing what an earlier read found for the
partitions that cannot answer differently.

Not Kafka's algorithm: the simulator's speed machinery beside ``ReplicaManager.read_from_log`` (Kafka's
``readFromLog``), used by ``DelayedFetch.on_complete`` and ``SessionDelayedFetch.on_complete``. Kafka
re-reads every partition of a completed fetch; a partition whose earlier read found nothing past the end,
and that ``PartitionChanges`` has not recorded a change of since, gets the same answer again, at this
fetch time, without being read: an empty read depends neither on the byte limits nor on min one message
(it adds 0 bytes, so the partitions read still see Kafka's limits, in request order), and a purgatory read
changes nothing. Proven equal to Kafka's re-read by tests/broker/test_delayed_fetch_incremental.py.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

from kafkasim.broker.fetch import FetchParams, LogReadResult, PartitionData, nothing_past_end
from kafkasim.broker.records import TopicPartition

# ReplicaManager.read_from_log(params, fetch_infos, read_from_purgatory): taken as a callable, so that this
# module beside ReplicaManager does not import it (the import circle of the purgatory's operations stays theirs).
ReadFromLog = Callable[[FetchParams, Sequence[tuple[TopicPartition, PartitionData]], bool],
                       list[tuple[TopicPartition, LogReadResult]]]


def reread_from_log(
    read_from_log: ReadFromLog,
    fetch_time_ms: int,
    params: FetchParams,
    fetch_infos: Sequence[tuple[TopicPartition, PartitionData]],
    priors: Sequence[LogReadResult | None],
    changed: Collection[TopicPartition],
) -> list[tuple[TopicPartition, LogReadResult]]:
    """``read_from_log(params, fetch_infos, read_from_purgatory=True)`` (ReplicaManager's, at
    ``fetch_time_ms``, its clock now), with ``priors`` (per partition the result of an earlier read, None: not
    read then) reused for the partitions that found nothing past the end then and are not in ``changed``
    (recorded by ``PartitionChanges`` since)."""
    isolation = params.isolation
    reused: list[LogReadResult | None] = []
    to_read: list[tuple[TopicPartition, PartitionData]] = []
    for (tp, fetch_info), prior in zip(fetch_infos, priors, strict=True):
        if (
            prior is not None
            and tp not in changed
            and nothing_past_end(prior, fetch_info.fetch_offset, isolation, exactly=False)
        ):
            reused.append(prior if prior.fetch_time_ms == fetch_time_ms else prior.at_fetch_time(fetch_time_ms))
        else:
            reused.append(None)
            to_read.append((tp, fetch_info))
    if len(to_read) == len(fetch_infos):
        return read_from_log(params, fetch_infos, True)
    read = iter(read_from_log(params, to_read, True)) if to_read else iter(())
    results: list[tuple[TopicPartition, LogReadResult]] = []
    for (tp, _), prior in zip(fetch_infos, reused, strict=True):
        results.append((tp, prior) if prior is not None else next(read))
    return results
