"""Log.delete_old_segments: Kafka's UnifiedLog.deleteOldSegments (log-start, retention.bytes, retention.ms
breaches), re-expressed from UnifiedLogTest's retention cases for simulated 100-byte batches."""

from __future__ import annotations

from kafkasim.broker.config import LogConfig
from kafkasim.broker.errors import Errors
from kafkasim.broker.log import Log
from kafkasim.timer import ManualTime

from .support import Broker, batch


def make_log(time: ManualTime | None = None, **config: int) -> Log:
    return Log(LogConfig(**config), time or ManualTime(), name="t-0")


def fill(log: Log, segments: int, ts: int = 0) -> None:
    """Append ``segments`` full 200-byte segments (two 10-record batches each, with segment.bytes = 200;
    the last one is the active segment), then move the HW to the LEO."""
    for _ in range(segments):
        log.append_as_leader([batch(ts=ts), batch(ts=ts)], 0)
    log.maybe_increment_high_watermark(log.log_end_offset_metadata)


def bases(log: Log) -> list[int]:
    return [s.base_offset for s in log.segments]


def held_batches(log: Log) -> int:
    return sum(len(s.batches) for s in log.segments)


def test_size_retention_deletes_oldest_while_the_rest_stays_at_least_retention_bytes():
    log = make_log(segment_bytes=200, retention_bytes=450)
    fill(log, 4)  # 800 bytes in segments 0, 20, 40, 60 (the last active)
    # 800 - 200 = 600 >= 450 -> delete; 600 - 200 = 400 < 450 -> keep: one segment goes, not two.
    assert log.delete_old_segments() == 1
    assert bases(log) == [20, 40, 60]
    assert log.log_start_offset == 20
    assert log.size_in_bytes == 600
    assert held_batches(log) == 6


def test_size_retention_is_off_at_minus_one_and_below_the_limit():
    log = make_log(segment_bytes=200)  # retention.bytes -1
    fill(log, 4)
    assert log.delete_old_segments() == 0
    log = make_log(segment_bytes=200, retention_bytes=801)
    fill(log, 4)
    assert log.delete_old_segments() == 0
    assert log.log_start_offset == 0


def test_only_segments_wholly_below_the_high_watermark_are_deleted():
    log = make_log(segment_bytes=200, retention_bytes=0)
    fill(log, 4)
    log.append_as_leader([batch()], 0)  # a fifth segment at 80, above the HW (80)
    assert log.high_watermark == 80
    assert log.delete_old_segments() == 4
    assert bases(log) == [80]
    assert log.log_start_offset == 80 <= log.high_watermark
    # With the HW inside segment 80 nothing more goes, although retention.bytes = 0 wants everything.
    assert log.delete_old_segments() == 0


def test_deleting_every_segment_rolls_a_new_active_segment_first():
    log = make_log(segment_bytes=200, retention_bytes=0)
    fill(log, 2)  # segments 0 and 20 (active, non-empty), HW = LEO = 40
    assert log.delete_old_segments() == 2
    assert bases(log) == [40]
    assert log.active_segment.is_empty
    assert (log.log_start_offset, log.high_watermark, log.log_end_offset) == (40, 40, 40)
    # An empty last segment is never deleted.
    assert log.delete_old_segments() == 0
    log.append_as_leader([batch()], 0)
    assert log.log_end_offset == 50


def test_time_retention_compares_the_newest_timestamp_with_now():
    time = ManualTime()
    log = make_log(time, segment_bytes=200, retention_ms=1000)
    fill(log, 1, ts=0)  # segment 0: records at t=0
    fill(log, 1, ts=600)  # segment 20: records at t=600
    log.append_as_leader([batch(ts=900)], 0)  # active segment 40
    log.maybe_increment_high_watermark(log.log_end_offset_metadata)
    time.sleep(1000)
    assert log.delete_old_segments() == 0  # 1000 - 0 is not > 1000
    time.sleep(1)
    assert log.delete_old_segments() == 1
    assert bases(log) == [20, 40]
    time.sleep(600)  # now 1601: segment 20 (newest 600) is 1001 old, the active one (900) only 701
    assert log.delete_old_segments() == 1
    assert bases(log) == [40]
    assert log.log_start_offset == 40


def test_time_retention_at_minus_one_keeps_everything():
    time = ManualTime()
    log = make_log(time, segment_bytes=200, retention_ms=-1)
    fill(log, 3)
    time.sleep(10**12)
    assert log.delete_old_segments() == 0


def test_a_follower_deletes_segments_below_the_leaders_log_start_offset():
    leader = make_log(segment_bytes=200, retention_bytes=200)
    follower = make_log(segment_bytes=200, retention_bytes=-1)
    fill(leader, 3)
    for segment in leader.segments:
        follower.append_as_follower(list(segment.batches))
    follower.maybe_update_high_watermark(leader.high_watermark)
    assert leader.delete_old_segments() == 2
    # The fetch response's log start offset moves the follower's; its next retention pass drops the rest.
    assert follower.maybe_increment_log_start_offset(leader.log_start_offset)
    assert follower.delete_old_segments() == 2
    assert bases(follower) == bases(leader) == [40]


def test_a_fetch_below_the_deleted_segments_gets_the_leaders_offsets_with_offset_out_of_range():
    broker = Broker(replicas=(0,), segment_bytes=200, retention_bytes=0)
    for _ in range(3):
        broker.produce(batch(), batch(), acks=1)  # segments 0, 20, 40; HW = LEO = 60 (RF 1)
    assert broker.log.delete_old_segments() == 3
    result = broker.fetch(-1, 10).partition()
    assert result.error is Errors.OFFSET_OUT_OF_RANGE
    # What the ListOffsets request Kafka's consumer sends next would answer (earliest = 60).
    assert (result.log_start_offset, result.log_end_offset) == (60, 60)
