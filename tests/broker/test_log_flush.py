"""Log flushes (UnifiedLog.append's flush.messages check, UnifiedLog.flush, the roll's flush-log) on a broker's
Disk: one device, FIFO, whose flush cost is fsync + write_per_kib per dirty KiB."""

from __future__ import annotations

import pytest

from kafkasim.broker.config import LONG_MAX, LogConfig
from kafkasim.broker.disk import Disk
from kafkasim.broker.log import Log
from kafkasim.timer import ManualTime

from .support import batch


class Clock:
    """The simulated instant (ms) the disk reads, moved by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def make_disk(clock: Clock, fsync: float = 1.0, per_kib: float = 0.0) -> Disk:
    return Disk(clock, lambda: fsync, lambda: per_kib)


def make_log(disk: Disk | None, **config: int) -> Log:
    return Log(LogConfig(**config), ManualTime(), name="t-0", disk=disk)


def test_flush_messages_1_flushes_every_append() -> None:
    disk = make_disk(Clock())
    log = make_log(disk, flush_messages=1)
    for _ in range(7):
        log.append_as_leader([batch(records=3)], leader_epoch=0)
    assert disk.flushes == 7
    assert (log.recovery_point, log.unflushed_bytes) == (21, 0)


def test_flush_messages_counts_messages_not_appends() -> None:
    # unflushedMessages = LEO - recoveryPoint: with 3 records a batch and flush.messages 7, appends 3, 5 and 8
    # reach it (9 >= 7 at the third append, then 15 - 9 < 7, 18 - 9 >= 7 at the sixth).
    disk = make_disk(Clock())
    log = make_log(disk, flush_messages=7)
    flushed_after = []
    for i in range(1, 9):
        log.append_as_leader([batch(records=3)], leader_epoch=0)
        if disk.flushes > len(flushed_after):
            flushed_after.append(i)
    assert flushed_after == [3, 6]
    assert log.recovery_point == 18
    assert log.unflushed_bytes == 200  # the two batches after the last flush


def test_the_default_flushes_nothing_and_a_log_without_disk_never_flushes() -> None:
    disk = make_disk(Clock())
    log = make_log(disk)
    assert log.config.flush_messages == LONG_MAX
    for _ in range(5):
        log.append_as_leader([batch()], leader_epoch=0)
    assert disk.flushes == 0
    no_disk = make_log(None, flush_messages=1)
    no_disk.append_as_leader([batch()], leader_epoch=0)
    assert not no_disk.flush()


def test_flush_cost_is_fsync_plus_dirty_kib_and_holds_the_thread() -> None:
    clock = Clock()
    disk = make_disk(clock, fsync=2.0, per_kib=0.5)
    log = make_log(disk)
    log.append_as_leader([batch(size=1024), batch(size=1024)], leader_epoch=0)
    disk.begin()
    assert log.flush()
    assert disk.take_delay() == pytest.approx(2.0 + 0.5 * 2)
    assert not log.flush()  # nothing above the recovery point
    assert disk.take_delay() == 0.0
    assert (disk.flushes, disk.flush_time_ms, disk.busy_ms) == (1, 3.0, 3.0)


def test_one_thread_s_flushes_run_one_after_the_other() -> None:
    # A produce of three partitions with flush.messages=1: the handler flushes each in turn.
    clock = Clock()
    disk = make_disk(clock, fsync=1.5)
    logs = [make_log(disk, flush_messages=1) for _ in range(3)]
    disk.begin()
    for log in logs:
        log.append_as_leader([batch()], leader_epoch=0)
    assert disk.take_delay() == pytest.approx(4.5)
    assert disk.max_flush_ms == pytest.approx(1.5)  # no waiting: the same thread


def test_the_shared_disk_queues_concurrent_flushes_first_come_first_served() -> None:
    clock = Clock()
    disk = make_disk(clock, fsync=2.0)
    first, second = make_log(disk, flush_messages=1), make_log(disk, flush_messages=1)
    disk.begin()
    first.append_as_leader([batch()], leader_epoch=0)
    assert disk.take_delay() == 2.0
    clock.now = 0.5  # another thread, while the first flush is on the disk
    disk.begin()
    second.append_as_leader([batch()], leader_epoch=0)
    assert disk.take_delay() == pytest.approx(3.5)  # waits 1.5 ms, then its own 2 ms
    assert disk.max_flush_ms == pytest.approx(3.5)  # LogFlushRateAndTimeMs times the wait too
    assert disk.busy_ms == 4.0
    clock.now = 10.0  # an idle disk: no wait
    disk.begin()
    first.append_as_leader([batch()], leader_epoch=0)
    assert disk.take_delay() == 2.0


def test_a_background_flush_occupies_the_disk_but_holds_no_thread() -> None:
    clock = Clock()
    disk = make_disk(clock, fsync=1.0)
    log = make_log(disk, segment_bytes=250)
    disk.begin()
    log.append_as_leader([batch()], leader_epoch=0)
    log.append_as_leader([batch()], leader_epoch=0)
    log.append_as_leader([batch()], leader_epoch=0)  # rolls: the roll's flush-log flushes the old segment
    assert len(log.segments) == 2
    assert disk.flushes == 1
    assert disk.take_delay() == 0.0
    assert disk.busy_until == 1.0
    assert log.recovery_point == 20


def test_a_slow_disk_factor_scales_the_flush() -> None:
    disk = make_disk(Clock(), fsync=1.0)
    disk.factor = 10.0
    log = make_log(disk, flush_messages=1)
    disk.begin()
    log.append_as_leader([batch()], leader_epoch=0)
    assert disk.take_delay() == 10.0


def test_truncation_and_a_new_log_start_keep_the_recovery_point_inside_the_log() -> None:
    disk = make_disk(Clock())
    log = make_log(disk, flush_messages=4)
    for _ in range(5):
        log.append_as_leader([batch(records=1)], leader_epoch=0)
    assert (log.recovery_point, log.unflushed_bytes) == (4, 100)
    log.truncate_to(2)  # below the recovery point: nothing left unflushed
    assert (log.recovery_point, log.unflushed_bytes) == (2, 0)
    for _ in range(3):
        log.append_as_leader([batch(records=1)], leader_epoch=0)
    assert (log.log_end_offset, log.recovery_point, log.unflushed_bytes) == (5, 2, 300)
    log.truncate_to(4)  # above it: what stays above it is recounted
    assert (log.recovery_point, log.unflushed_bytes) == (2, 200)
    log.update_high_watermark(4)
    log.maybe_increment_log_start_offset(3)
    assert (log.recovery_point, log.unflushed_bytes) == (3, 100)
    log.truncate_fully_and_start_at(10)
    assert (log.recovery_point, log.unflushed_bytes) == (10, 0)


def test_log_config_refuses_a_flush_interval_below_kafka_s_minimum() -> None:
    with pytest.raises(ValueError, match="flush_messages must be > 0"):
        LogConfig(flush_messages=0)
    with pytest.raises(ValueError, match="flush_ms must be >= 0"):
        LogConfig(flush_ms=-1)


def test_the_page_cache_holds_the_last_bytes_written_over_every_partition() -> None:
    clock = Clock()
    disk = Disk(clock, lambda: 1.0, lambda: 0.0, page_cache_bytes=250, read_latency=lambda: 5.0,
                read_per_kib=lambda: 1.0)
    logs = [make_log(disk), make_log(disk)]
    for ms in range(6):  # 100 bytes a millisecond, alternating partitions
        clock.now = float(ms)
        logs[ms % 2].append_as_leader([batch(ts=ms)], leader_epoch=0)
    old, recent, newest = logs[0].active_segment.batches  # written at 0, 2 and 4 ms
    assert disk.written == 600
    assert disk.cold_bytes([old]) == 100  # 600 written since: out of the 250-byte cache
    assert disk.cold_bytes([recent]) == 100  # 400 since
    assert disk.cold_bytes([newest]) == 0  # 200 since
    young = logs[1].active_segment.batches  # written at 1, 3 and 5 ms: 500, 300 and 100 since
    assert disk.cold_bytes(young) == 200
    assert disk.cold_bytes(young[2:]) == 0
    disk.begin()
    disk.read(2048)
    assert disk.take_delay() == 7.0  # read_latency + 2 KiB
    assert (disk.reads, disk.read_bytes) == (1, 2048)


def test_an_unlimited_page_cache_tracks_nothing_and_reads_nothing_from_disk() -> None:
    disk = make_disk(Clock())
    log = make_log(disk)
    log.append_as_leader([batch()], leader_epoch=0)
    assert disk.page_cache_bytes < 0
    assert (disk.written, disk.cold_bytes(log.active_segment.batches)) == (0, 0)


def test_the_page_cache_forgets_checkpoints_it_no_longer_needs() -> None:
    clock = Clock()
    disk = Disk(clock, lambda: 1.0, lambda: 0.0, page_cache_bytes=250)
    log = make_log(disk, segment_bytes=10**6)
    for ms in range(5000):
        clock.now = float(ms)
        log.append_as_leader([batch(ts=ms)], leader_epoch=0)
    batches = log.active_segment.batches
    assert len(disk._checkpoint_ms) < 5000  # the old ones were dropped
    assert disk.cold_bytes(batches[:1]) == 100  # older than every checkpoint kept
    assert disk.cold_bytes(batches[-4:]) == 200  # 400 and 300 written since; then 200 and 100
    assert disk.cold_bytes(batches[-2:]) == 0
