"""A broker's disk as its log flushes see it: one device, FIFO, shared by every partition of the broker.

Kafka leaves flushing to the OS by default (``flush.messages`` = ``flush.ms`` = Long.MAX_VALUE): an append
writes to the page cache and returns. A topic that sets ``flush.messages`` makes ``UnifiedLog.append`` call
``flush`` itself once ``LocalLog.unflushedMessages >= flush.messages`` -- on the thread doing the append (a
request handler for a leader, a replica fetcher for a follower) -- and ``flush.ms`` has the
``kafka-log-flusher`` task (``LogManager.flushDirtyLogs``) flush a log whose last flush is that old. A
flush is ``LogSegment.flush``: ``FileChannel.force`` of the segment and its indexes, timed by Kafka's
``LogFlushStats.LogFlushRateAndTimeMs``.

Cost of one flush: ``fsync`` (the device's latency to make the write durable) plus ``write_per_kib`` times
the dirty KiB it writes, each drawn from its own named stream. The device serves one flush at a time,
first come first served: a flush asked for while another is in progress waits for it (``busy_until``).
The thread that asked waits for its flush to end: ``begin`` marks the start of a thread's synchronous
work, ``flush(..., foreground=True)`` chains that thread's flushes one after the other, and ``take_delay``
tells the thread how long it was held. A background flush (the roll's ``flush-log`` task, scheduled by
``UnifiedLog.roll``) occupies the device without holding the caller.

The page cache (``page_cache_bytes``, unlimited by default): every append goes to it; it holds the last
``page_cache_bytes`` the broker wrote, over all its partitions. A fetch that reads a batch written before
those (a lagging or replaying consumer, a follower catching up) reads it from the disk: ``read_latency`` plus
``read_per_kib`` per KiB, queued on the same device, holding the handler thread (``read``).

Simplifications: the flush's time is reserved when it is asked for (its end is known at once: no
preemption, no merging of concurrent fsyncs into one device flush); a flush of several segments counts as
one (Kafka's timer times each segment's flush). The page cache is a window over the bytes written, by
write order: a read does not bring data back into it (no LRU refresh, no readahead beyond the read), and a
batch's age in it is counted from its CreateTime (the producer's timestamp, a network trip before the
append). The OS's background writeback of dirty pages (Linux's ``vm.dirty_background_ratio``,
``vm.dirty_expire_centisecs``) is not modelled: the disk does only flushes and cold reads.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence
from typing import Final

from kafkasim.broker.records import RecordBatch

KIB: Final = 1024.0

Sampler = Callable[[], float]


class Disk:
    """One broker's disk: flush costs drawn from ``fsync`` and ``write_per_kib`` (ms), FIFO service."""

    __slots__ = (
        "_now",
        "_fsync",
        "_write_per_kib",
        "factor",
        "busy_until",
        "busy_ms",
        "flushes",
        "flush_time_ms",
        "max_flush_ms",
        "_thread_at",
        "page_cache_bytes",
        "_read_latency",
        "_read_per_kib",
        "written",
        "reads",
        "read_bytes",
        "_checkpoint_ms",
        "_checkpoint_written",
        "_first",
    )

    def __init__(
        self,
        now: Callable[[], float],
        fsync: Sampler,
        write_per_kib: Sampler,
        *,
        page_cache_bytes: int = -1,
        read_latency: Sampler | None = None,
        read_per_kib: Sampler | None = None,
    ) -> None:
        self._now = now
        self._fsync = fsync
        self._write_per_kib = write_per_kib
        # The page cache's size; negative: unlimited (every read from memory, nothing tracked).
        self.page_cache_bytes = page_cache_bytes
        self._read_latency = read_latency if read_latency is not None else _zero
        self._read_per_kib = read_per_kib if read_per_kib is not None else _zero
        # Bytes the broker's logs took (appends), and per simulated millisecond that saw one, how many had been
        # written before it (kept from _first on: older ones are out of the cache whatever comes next).
        self.written = 0
        self._checkpoint_ms: list[int] = []
        self._checkpoint_written: list[int] = []
        self._first = 0
        self.reads = 0
        self.read_bytes = 0
        # A slow_disk fault's factor (BrokerServer.scale_disk): multiplies every flush's service time.
        self.factor = 1.0
        self.busy_until = 0.0
        # The device's busy time (its utilisation) and Kafka's LogFlushRateAndTimeMs: count and time.
        self.busy_ms = 0.0
        self.flushes = 0
        self.flush_time_ms = 0.0
        self.max_flush_ms = 0.0
        # When the thread doing synchronous work now (begin) is done with the flushes it asked for.
        self._thread_at = 0.0

    def begin(self) -> None:
        """A thread starts work that may flush (an append): it holds no flush yet."""
        self._thread_at = self._now()

    def flush(self, dirty_bytes: int, *, foreground: bool = True) -> float:
        """A flush of ``dirty_bytes``; returns when it ends. ``foreground``: the calling thread waits for it
        (after its earlier flushes since ``begin``); else it only occupies the device."""
        now = self._now()
        ready = self._thread_at if foreground and self._thread_at > now else now
        start = self.busy_until if self.busy_until > ready else ready
        service = (self._fsync() + self._write_per_kib() * (dirty_bytes / KIB)) * self.factor
        end = start + service
        self.busy_until = end
        self.busy_ms += service
        # LogFlushRateAndTimeMs times the whole call: the wait for the device and its service.
        took = end - ready
        self.flushes += 1
        self.flush_time_ms += took
        if took > self.max_flush_ms:
            self.max_flush_ms = took
        if foreground:
            self._thread_at = end
        return end

    def wrote(self, size: int) -> None:
        """An append of ``size`` bytes went to the page cache (only tracked when its size is bounded)."""
        cache = self.page_cache_bytes
        if cache < 0:
            return
        now_ms = int(self._now())
        times = self._checkpoint_ms
        if not times or times[-1] < now_ms:
            times.append(now_ms)
            self._checkpoint_written.append(self.written)
        self.written += size
        written = self._checkpoint_written
        first = self._first
        # A checkpoint with more than the cache written since is out of it for good.
        while first < len(times) - 1 and self.written - written[first + 1] > cache:
            first += 1
        if first > 4096:
            del times[:first]
            del written[:first]
            first = 0
        self._first = first

    def cold_bytes(self, batches: Sequence[RecordBatch]) -> int:
        """The bytes of ``batches`` (one partition's read) no longer in the page cache: those created before
        the last ``page_cache_bytes`` written."""
        cache = self.page_cache_bytes
        if cache < 0 or not batches:
            return 0
        times = self._checkpoint_ms
        written = self._checkpoint_written
        cold = 0
        for batch in batches:
            index = bisect_left(times, batch.create_time_ms, self._first)
            if index == len(times):
                return cold  # nothing written since: this batch and the later ones are in the cache
            if index == self._first and self._first > 0 and batch.create_time_ms < times[index]:
                cold += batch.size_in_bytes  # older than every checkpoint kept
            elif self.written - written[index] > cache:
                cold += batch.size_in_bytes
            else:
                return cold  # batches are in write order: the rest are younger
        return cold

    def read(self, size: int) -> float:
        """A read of ``size`` bytes from the disk by the calling thread (after its earlier disk work since
        ``begin``); returns when it ends."""
        now = self._now()
        ready = self._thread_at if self._thread_at > now else now
        start = self.busy_until if self.busy_until > ready else ready
        service = (self._read_latency() + self._read_per_kib() * (size / KIB)) * self.factor
        end = start + service
        self.busy_until = end
        self.busy_ms += service
        self.reads += 1
        self.read_bytes += size
        self._thread_at = end
        return end

    def take_delay(self) -> float:
        """How long the thread's flushes since ``begin`` hold it from now (0 if none); resets."""
        now = self._now()
        delay = self._thread_at - now
        self._thread_at = now
        return delay if delay > 0.0 else 0.0


def _zero() -> float:
    return 0.0
