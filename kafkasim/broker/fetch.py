"""Fetch request and response shapes: FetchParams, PartitionData, LogReadResult (Kafka's ``FetchParams``,
``FetchRequest.PartitionData``, ``LogReadResult``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final, NamedTuple

from kafkasim.broker.config import KafkaConfig
from kafkasim.broker.errors import Errors
from kafkasim.broker.log import FetchIsolation, Log
from kafkasim.broker.log_offset_metadata import UNKNOWN_OFFSET_METADATA, LogOffsetMetadata
from kafkasim.broker.log_segment import FetchDataInfo
from kafkasim.broker.records import RecordBatch

CONSUMER_REPLICA_ID: Final = -1
FUTURE_LOCAL_REPLICA_ID: Final = -3
NO_EPOCH: Final = -1  # "absent" for current_leader_epoch / last_fetched_epoch, as on the wire
LATEST_FETCH_VERSION: Final = 17


@dataclass(frozen=True, slots=True)
class FetchParams:
    """Request-level fetch parameters (Kafka's ``FetchParams``).

    ``replica_id >= 0`` is a follower (isolation forced to LOG_END, like Kafka's ``FetchIsolation.of``);
    ``-1`` a consumer (HIGH_WATERMARK by default). Fetch from follower (KIP-392, client metadata) is not
    simulated, so every fetch is served by the leader only.
    """

    replica_id: int
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    isolation: FetchIsolation = FetchIsolation.HIGH_WATERMARK
    replica_epoch: int = -1
    request_version: int = LATEST_FETCH_VERSION
    # Derived from the fields above once, in __post_init__ (Kafka's isFromFollower, fetchOnlyLeader and the
    # request version's byte-limit rule): the broker asks for every partition read and parked check, and a
    # frozen FetchParams serves every request of a client (plain attributes, not properties).
    is_from_follower: bool = field(init=False, compare=False, repr=False)
    # Followers always; consumers unless they send client metadata (fetch from follower, not simulated).
    fetch_only_leader: bool = field(init=False, compare=False, repr=False)
    # Fetch v0-2 had no "at least one batch" rule.
    hard_max_bytes_limit: bool = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.replica_id >= 0 and self.isolation is not FetchIsolation.LOG_END:
            object.__setattr__(self, "isolation", FetchIsolation.LOG_END)
        object.__setattr__(self, "is_from_follower", self.replica_id >= 0)
        object.__setattr__(self, "fetch_only_leader", True)
        object.__setattr__(self, "hard_max_bytes_limit", self.request_version <= 2)

    @property
    def is_from_consumer(self) -> bool:
        return self.replica_id < 0 and self.replica_id != FUTURE_LOCAL_REPLICA_ID


def fetch_params_from_request(
    config: KafkaConfig,
    replica_id: int,
    max_wait_ms: int,
    min_bytes: int,
    max_bytes: int,
    *,
    replica_epoch: int = -1,
    read_committed: bool = False,
) -> FetchParams:
    """What KafkaApis makes of a fetch request (``KafkaApis.handleFetchRequest``): ``max_bytes`` capped by the
    broker's ``fetch.max.bytes``, ``min_bytes`` by ``max_bytes``. Quotas are not simulated."""
    capped_max = min(max_bytes, config.fetch_max_bytes)
    if replica_id >= 0:
        isolation = FetchIsolation.LOG_END
    elif read_committed:
        isolation = FetchIsolation.TXN_COMMITTED
    else:
        isolation = FetchIsolation.HIGH_WATERMARK
    return FetchParams(replica_id, max_wait_ms, min(min_bytes, capped_max), capped_max, isolation, replica_epoch)


class PartitionData:
    """One partition of a fetch request (Kafka's ``FetchRequest.PartitionData``); epochs -1 = absent.

    Immutable (``Final`` fields). A plain class rather than a frozen dataclass: every fetch builds one per
    partition it sends and its session compares it with the last one sent, and a dataclass's generated
    ``__init__`` and ``__eq__`` stay interpreted Python even in the compiled build.
    """

    __slots__ = ("fetch_offset", "log_start_offset", "max_bytes", "current_leader_epoch", "last_fetched_epoch")

    def __init__(
        self,
        fetch_offset: int,
        log_start_offset: int,
        max_bytes: int,
        current_leader_epoch: int = NO_EPOCH,
        last_fetched_epoch: int = NO_EPOCH,
    ) -> None:
        self.fetch_offset: Final = fetch_offset
        self.log_start_offset: Final = log_start_offset
        self.max_bytes: Final = max_bytes
        self.current_leader_epoch: Final = current_leader_epoch
        self.last_fetched_epoch: Final = last_fetched_epoch

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, PartitionData)
            and self.fetch_offset == other.fetch_offset
            and self.log_start_offset == other.log_start_offset
            and self.max_bytes == other.max_bytes
            and self.current_leader_epoch == other.current_leader_epoch
            and self.last_fetched_epoch == other.last_fetched_epoch
        )

    def __hash__(self) -> int:
        return hash((self.fetch_offset, self.log_start_offset, self.max_bytes, self.current_leader_epoch,
                     self.last_fetched_epoch))

    def __repr__(self) -> str:
        return (
            f"PartitionData(fetch_offset={self.fetch_offset}, log_start_offset={self.log_start_offset}, "
            f"max_bytes={self.max_bytes}, current_leader_epoch={self.current_leader_epoch}, "
            f"last_fetched_epoch={self.last_fetched_epoch})"
        )


class EpochEndOffset(NamedTuple):
    """Answer of ``last_offset_for_leader_epoch`` and a fetch's diverging epoch."""

    error: Errors
    leader_epoch: int = -1
    end_offset: int = -1


class LogReadInfo:
    """What ``Partition.fetch_records`` read, with the offsets captured *before* the read (Kafka's
    ``Partition.readRecords``)."""

    __slots__ = (
        "fetched_data",
        "diverging_epoch",
        "high_watermark",
        "log_start_offset",
        "log_end_offset",
        "last_stable_offset",
    )

    def __init__(
        self,
        fetched_data: FetchDataInfo,
        diverging_epoch: EpochEndOffset | None,
        high_watermark: int,
        log_start_offset: int,
        log_end_offset: int,
        last_stable_offset: int,
    ) -> None:
        self.fetched_data = fetched_data
        self.diverging_epoch = diverging_epoch
        self.high_watermark = high_watermark
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_end_offset
        self.last_stable_offset = last_stable_offset


class LogReadResult:
    """One partition of a fetch response (Kafka's ``LogReadResult``; the callback receives these).

    ``high_watermark``, ``log_start_offset`` and ``log_end_offset`` are the leader's, captured before the
    read: a follower whose own fetch advanced the HW still sees the old one (Kafka's
    ``Partition.readRecords``). ``records`` are whole batches; ``partial_batch`` a trailing batch cut by the
    byte limit (counted in ``size_in_bytes``). Error results carry -1 offsets and no records, except
    OFFSET_OUT_OF_RANGE, which carries the leader's log start and end offsets (the answer of the ListOffsets
    request Kafka's clients would send next).
    """

    __slots__ = (
        "info",
        "error",
        "diverging_epoch",
        "high_watermark",
        "log_start_offset",
        "log_end_offset",
        "last_stable_offset",
        "follower_log_start_offset",
        "fetch_time_ms",
    )

    def __init__(
        self,
        info: FetchDataInfo,
        error: Errors = Errors.NONE,
        diverging_epoch: EpochEndOffset | None = None,
        high_watermark: int = -1,
        log_start_offset: int = -1,
        log_end_offset: int = -1,
        last_stable_offset: int = -1,
        follower_log_start_offset: int = -1,
        fetch_time_ms: int = -1,
    ) -> None:
        self.info = info
        self.error = error
        self.diverging_epoch = diverging_epoch
        self.high_watermark = high_watermark
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_end_offset
        self.last_stable_offset = last_stable_offset
        self.follower_log_start_offset = follower_log_start_offset
        self.fetch_time_ms = fetch_time_ms

    def at_fetch_time(self, fetch_time_ms: int) -> LogReadResult:
        """The same result, read at ``fetch_time_ms``."""
        return LogReadResult(
            self.info,
            self.error,
            self.diverging_epoch,
            self.high_watermark,
            self.log_start_offset,
            self.log_end_offset,
            self.last_stable_offset,
            self.follower_log_start_offset,
            fetch_time_ms,
        )

    @property
    def records(self) -> Sequence[RecordBatch]:
        return self.info.records

    @property
    def partial_batch(self) -> RecordBatch | None:
        return self.info.partial_batch

    @property
    def size_in_bytes(self) -> int:
        return self.info.size_in_bytes

    @property
    def fetch_offset_metadata(self) -> LogOffsetMetadata:
        return self.info.fetch_offset_metadata

    def __repr__(self) -> str:
        return (
            f"LogReadResult({self.error.name}, hw={self.high_watermark}, leo={self.log_end_offset}, "
            f"logStart={self.log_start_offset}, {self.info!r})"
        )


def out_of_range_result(log: Log) -> LogReadResult:
    """``readFromLog``'s OFFSET_OUT_OF_RANGE result, with the leader's log start and end offsets.

    Simplification: Kafka answers -1 offsets here and the client then asks with a ListOffsets request
    (a consumer with auto.offset.reset=earliest for the earliest offset, the replica fetcher for the
    leader's start or end); there is no ListOffsets request in the simulator, so the error result
    carries the answer it would get, one round trip early. Without it a fetch position deleted by
    retention could never be reset."""
    return LogReadResult(
        FetchDataInfo(UNKNOWN_OFFSET_METADATA),
        Errors.OFFSET_OUT_OF_RANGE,
        log_start_offset=log.log_start_offset,
        log_end_offset=log.log_end_offset,
    )


def nothing_past_end(result: LogReadResult, fetch_offset: int, isolation: FetchIsolation, *, exactly: bool) -> bool:
    """Did this read find nothing past the end it may read to (the LEO, HW or LSO it captured before the
    read), so that its empty answer depended neither on the byte limits nor on min one message? ``exactly``:
    at the end, not beyond it (beyond the HW is DelayedFetch's Case F)."""
    if result.info.size_in_bytes != 0 or result.error is not Errors.NONE or result.diverging_epoch is not None:
        return False
    if isolation is FetchIsolation.LOG_END:
        end = result.log_end_offset
    elif isolation is FetchIsolation.HIGH_WATERMARK:
        end = result.high_watermark
    else:
        end = result.last_stable_offset
    return fetch_offset == end if exactly else fetch_offset >= end


class FetchPartitionStatus:
    """A parked fetch's partition: the fetch offset metadata frozen at arrival (Kafka's
    ``FetchPartitionStatus``) and the request's partition data."""

    __slots__ = ("start_offset_metadata", "fetch_info")

    def __init__(self, start_offset_metadata: LogOffsetMetadata, fetch_info: PartitionData) -> None:
        self.start_offset_metadata = start_offset_metadata
        self.fetch_info = fetch_info

    def __repr__(self) -> str:
        return f"FetchPartitionStatus({self.start_offset_metadata}, {self.fetch_info})"
