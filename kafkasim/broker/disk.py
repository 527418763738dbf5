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

Simplifications: the flush's time is reserved when it is asked for (its end is known at once: no
preemption, no merging of concurrent fsyncs into one device flush); a flush of several segments counts as
one (Kafka's timer times each segment's flush); the flush is the disk's only work (reads from the page
cache cost the handlers' ``read_per_kib``, writeback of dirty pages by the OS is not modelled).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

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
    )

    def __init__(self, now: Callable[[], float], fsync: Sampler, write_per_kib: Sampler) -> None:
        self._now = now
        self._fsync = fsync
        self._write_per_kib = write_per_kib
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

    def take_delay(self) -> float:
        """How long the thread's flushes since ``begin`` hold it from now (0 if none); resets."""
        now = self._now()
        delay = self._thread_at - now
        self._thread_at = now
        return delay if delay > 0.0 else 0.0
