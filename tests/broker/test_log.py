"""Log: append, roll (LogSegment.shouldRoll), read bounds (UnifiedLog.read), HW maintenance
(UnifiedLog.maybeIncrementHighWatermark), truncation; Kafka's UnifiedLogTest / LogSegmentTest cases
re-expressed for simulated batches."""

import random

import pytest

from kafkasim.broker.config import LogConfig
from kafkasim.broker.errors import Errors, KafkaError
from kafkasim.broker.log import FetchIsolation, Log, LogOffsetMetadata
from kafkasim.broker.records import RecordBatch
from kafkasim.timer import ManualTime

from .support import batch

LOG_END = FetchIsolation.LOG_END
HW = FetchIsolation.HIGH_WATERMARK


def make_log(time=None, **config) -> Log:
    return Log(LogConfig(**config), time or ManualTime(), name="t-0")


# ------------------------------------------------------------------------------------------------ append


def test_append_as_leader_assigns_offsets_from_leo_and_epoch():
    log = make_log()
    info = log.append_as_leader([batch(records=3), batch(records=2)], leader_epoch=4)
    assert (info.first_offset, info.last_offset, info.valid_bytes) == (0, 4, 200)
    info = log.append_as_leader([batch(records=1)], leader_epoch=4)
    assert (info.first_offset, info.last_offset) == (5, 5)
    stored = log.active_segment.batches
    assert [(b.base_offset, b.last_offset, b.partition_leader_epoch) for b in stored] == [
        (0, 2, 4),
        (3, 4, 4),
        (5, 5, 4),
    ]
    assert log.log_end_offset_metadata == LogOffsetMetadata(6, 0, 300)
    assert log.leader_epoch_cache.end_offset_for(4, log.log_end_offset) == (4, 6)


def test_append_as_follower_keeps_offsets_and_learns_epochs():
    leader = make_log()
    leader.append_as_leader([batch(), batch()], leader_epoch=0)
    leader.append_as_leader([batch()], leader_epoch=1)
    follower = make_log()
    follower.append_as_follower(list(leader.active_segment.batches))
    assert follower.log_end_offset == 30
    assert [b.base_offset for b in follower.active_segment.batches] == [0, 10, 20]
    assert follower.leader_epoch_cache.end_offset_for(0, 30) == (0, 20)
    assert follower.latest_epoch == 1


def test_append_as_follower_rejects_gap():
    leader = make_log()
    leader.append_as_leader([batch(), batch()], leader_epoch=0)
    follower = make_log()
    with pytest.raises(ValueError, match="expected a batch at offset 0"):
        follower.append_as_follower([leader.active_segment.batches[1]])


def test_batch_larger_than_max_message_bytes_is_rejected():
    log = make_log(max_message_bytes=500)
    with pytest.raises(KafkaError) as e:
        log.append_as_leader([batch(size=501)], 0)
    assert e.value.error is Errors.MESSAGE_TOO_LARGE
    assert log.log_end_offset == 0


def test_message_size_check_in_append_as_follower():
    # UnifiedLogTest.testMessageSizeCheckInAppendAsFollower: UnifiedLog.appendAsFollower validates with
    # ignoreRecordSize = true -- a follower copies whatever its leader holds, whatever its own limit.
    first = batch(size=80, records=2).with_offsets(0, 0)
    second = batch(size=120, records=2).with_offsets(2, 0)
    log = make_log(max_message_bytes=second.size_in_bytes - 1)
    log.append_as_follower([first])
    # The second batch is larger than the limit, but appendAsFollower does not check the size.
    info = log.append_as_follower([second])
    assert (info.first_offset, info.last_offset, info.valid_bytes) == (2, 3, 120)
    assert log.log_end_offset == 4


def test_record_set_larger_than_segment_is_rejected():
    log = make_log(segment_bytes=250)
    with pytest.raises(KafkaError) as e:
        log.append_as_leader([batch(), batch(), batch()], 0)
    assert e.value.error is Errors.RECORD_LIST_TOO_LARGE
    assert log.log_end_offset == 0


# -------------------------------------------------------------------------------------------------- roll


def test_size_roll_uses_whole_incoming_set():
    # LogSegment.shouldRoll: size + incoming > segment.bytes, with incoming = the whole record set.
    log = make_log(segment_bytes=300)
    log.append_as_leader([batch()], 0)  # size 100
    log.append_as_leader([batch(), batch()], 0)  # 100 + 200 = 300, not > 300: stays
    assert len(log.segments) == 1
    log.append_as_leader([batch(size=50)], 0)  # 300 + 50 > 300: rolls
    assert [s.base_offset for s in log.segments] == [0, 30]
    log.append_as_leader([batch(), batch()], 0)  # 50 + 200 = 250 <= 300: stays
    assert len(log.segments) == 2
    # Each batch would fit alone (250 + 40 <= 300) but the set of two (80) does not: roll before the set.
    log.append_as_leader([batch(size=40), batch(size=40)], 0)
    assert [s.base_offset for s in log.segments] == [0, 30, 60]
    assert log.active_segment.size == 80


def test_time_roll_uses_batch_timestamps_not_clock():
    time = ManualTime(0)
    log = make_log(time, segment_ms=1000)
    log.append_as_leader([batch(ts=100)], 0)
    time.sleep(10_000)  # the clock does not matter when batches carry timestamps
    log.append_as_leader([batch(ts=1100)], 0)  # waited 1000, not > 1000
    assert len(log.segments) == 1
    log.append_as_leader([batch(ts=1101)], 0)  # waited 1001 > 1000
    assert [s.base_offset for s in log.segments] == [0, 20]


def test_time_roll_uses_max_timestamp_of_incoming_set():
    log = make_log(segment_ms=1000)
    log.append_as_leader([batch(ts=0)], 0)
    log.append_as_leader([batch(ts=5), batch(ts=1001), batch(ts=7)], 0)
    assert len(log.segments) == 2


def test_time_roll_without_timestamps_uses_segment_age():
    time = ManualTime(0)
    log = make_log(time, segment_ms=1000)
    log.append_as_leader([batch(ts=-1)], 0)
    time.set(1000)
    log.append_as_leader([batch(ts=-1)], 0)
    assert len(log.segments) == 1
    time.set(1001)
    log.append_as_leader([batch(ts=-1)], 0)
    assert len(log.segments) == 2
    assert log.active_segment.created_ms == 1001


def test_empty_segment_never_rolls_on_time():
    time = ManualTime(0)
    log = make_log(time, segment_ms=10)
    time.set(1_000_000)
    log.append_as_leader([batch(ts=999_999)], 0)
    assert len(log.segments) == 1
    assert log.active_segment.created_ms == 0  # not even replaced by a fresh empty segment
    # The first batch's own timestamp starts the wait for the non-empty segment.
    log.append_as_leader([batch(ts=999_999 + 10)], 0)
    assert len(log.segments) == 1


def test_time_roll_jitter():
    rng_seed = 7
    expected_jitter = random.Random(rng_seed).randrange(100)
    time = ManualTime(0)
    log = Log(LogConfig(segment_ms=1000, segment_jitter_ms=100), time, rng=random.Random(rng_seed))
    assert log.active_segment.roll_jitter_ms == expected_jitter
    log.append_as_leader([batch(ts=0)], 0)
    log.append_as_leader([batch(ts=1000 - expected_jitter)], 0)
    assert len(log.segments) == 1
    log.append_as_leader([batch(ts=1000 - expected_jitter + 1)], 0)
    assert len(log.segments) == 2


def test_index_full_roll_offset_index():
    # 24 index bytes: 3 offset entries (8 bytes) or 2 time entries (12 bytes). With index.interval.bytes 0
    # every append after the first adds an offset entry; equal timestamps add only one time entry.
    log = make_log(segment_index_bytes=24, index_interval_bytes=0)
    for _ in range(4):
        log.append_as_leader([batch(ts=5)], 0)
    assert len(log.segments) == 1
    assert (log.active_segment.offset_index_entries, log.active_segment.time_index_entries) == (3, 1)
    log.append_as_leader([batch(ts=5)], 0)
    assert len(log.segments) == 2


def test_index_full_roll_time_index():
    log = make_log(segment_index_bytes=24, index_interval_bytes=0)
    for i in range(3):
        log.append_as_leader([batch(ts=i)], 0)
    assert len(log.segments) == 1
    assert log.active_segment.time_index_entries == 2
    log.append_as_leader([batch(ts=3)], 0)
    assert len(log.segments) == 2


def test_index_entry_needs_more_than_index_interval_bytes():
    log = make_log(index_interval_bytes=250)
    for i in range(4):
        log.append_as_leader([batch(ts=i)], 0)  # 100 bytes each: > 250 after the third
    assert log.active_segment.offset_index_entries == 1


def test_roll_moves_hw_metadata_when_hw_equals_leo():
    # LogSegment.shouldRoll, UnifiedLog.roll (updateHighWatermarkWithLogEndOffset)
    log = make_log(segment_bytes=200)
    log.append_as_leader([batch(), batch()], 0)
    log.maybe_increment_high_watermark(log.log_end_offset_metadata)
    assert log.high_watermark_metadata == LogOffsetMetadata(20, 0, 200)
    log.append_as_leader([batch()], 0)  # rolls at 20
    assert log.high_watermark_metadata == LogOffsetMetadata(20, 20, 0)
    assert log.log_end_offset_metadata == LogOffsetMetadata(30, 20, 100)


def test_roll_keeps_hw_metadata_when_hw_below_leo():
    log = make_log(segment_bytes=200)
    log.append_as_leader([batch(), batch()], 0)
    log.maybe_increment_high_watermark(LogOffsetMetadata(10, 0, 100))
    log.append_as_leader([batch()], 0)
    assert log.high_watermark_metadata == LogOffsetMetadata(10, 0, 100)


class Listener:
    """What a log tells the run's segments table: (base offset, reason) per roll, (base offset, passed) per HW
    event."""

    def __init__(self) -> None:
        self.rolls: list[tuple[int, str]] = []
        self.high_watermark: list[tuple[int, bool]] = []

    def log(self, time=None, **config) -> Log:
        return Log(LogConfig(**config), time or ManualTime(), name="t-0",
                   on_roll=lambda base, reason: self.rolls.append((base, reason)),
                   on_high_watermark_segment=lambda base, passed: self.high_watermark.append((base, passed)))


def test_each_roll_says_which_of_should_roll_s_conditions_held():
    heard = Listener()
    time = ManualTime(0)
    log = heard.log(time, segment_bytes=250, segment_ms=1000, segment_index_bytes=24, index_interval_bytes=0)
    log.append_as_leader([batch(ts=0), batch(ts=0)], 0)
    log.append_as_leader([batch(ts=0)], 0)  # 200 + 100 > 250
    log.append_as_leader([batch(ts=1001)], 0)  # waited 1001 > 1000
    for _ in range(3):
        log.append_as_leader([batch(ts=1001, size=10)], 0)  # 3 offset index entries: full
    log.append_as_leader([batch(ts=1001, size=10)], 0)
    log.roll()  # asked for (Kafka's UnifiedLog.roll)
    assert heard.rolls == [(20, "segment.bytes"), (30, "segment.ms"), (70, "offset index full"),
                           (80, "requested")]


def test_a_retention_roll_says_so():
    heard = Listener()
    time = ManualTime(0)
    log = heard.log(time, retention_ms=100)
    log.append_as_leader([batch(ts=0)], 0)
    log.maybe_increment_high_watermark(log.log_end_offset_metadata)
    time.set(1000)
    assert log.delete_old_segments() == 1
    assert heard.rolls == [(10, "retention")]


def test_the_high_watermark_reaching_a_rolled_segment_is_told_once_then_passing_its_base():
    # DelayedFetch.tryComplete's case F for a consumer: a parked fetch below the new segment's base completes
    # when the HW first lies in that segment, one parked at the base when the HW first lies above it.
    heard = Listener()
    log = heard.log(segment_bytes=200)
    log.append_as_leader([batch(), batch()], 0)  # 0..19 in segment 0
    log.maybe_increment_high_watermark(LogOffsetMetadata(10, 0, 100))
    log.append_as_leader([batch()], 0)  # rolls at 20; HW 10 < LEO: still on segment 0
    assert heard.rolls == [(20, "segment.bytes")] and heard.high_watermark == []
    log.maybe_increment_high_watermark(LogOffsetMetadata(20, 0, 200))  # offset 20 on the old segment
    assert heard.high_watermark == []
    log.maybe_increment_high_watermark(LogOffsetMetadata(20, 20, 0))  # the same offset, the new segment
    assert heard.high_watermark == [(20, False)]
    log.maybe_increment_high_watermark(LogOffsetMetadata(30, 20, 100))
    assert heard.high_watermark == [(20, False), (20, True)]


def test_a_roll_with_the_high_watermark_at_the_log_end_reaches_the_new_segment_at_once():
    heard = Listener()
    log = heard.log(segment_bytes=200)
    log.append_as_leader([batch(), batch()], 0)
    log.maybe_increment_high_watermark(log.log_end_offset_metadata)  # HW = LEO = 20
    log.append_as_leader([batch()], 0)  # the roll moves the HW's metadata to (20, 20, 0)
    assert heard.high_watermark == [(20, False)]
    log.maybe_increment_high_watermark(log.log_end_offset_metadata)
    assert heard.high_watermark == [(20, False), (20, True)]


def test_an_increase_across_several_rolled_segments_tells_each():
    heard = Listener()
    log = heard.log(segment_bytes=100)
    for _ in range(3):
        log.append_as_leader([batch()], 0)  # segments at 0, 10, 20
    log.maybe_increment_high_watermark(log.log_end_offset_metadata)  # 30 on segment 20
    assert heard.high_watermark == [(10, False), (10, True), (20, False), (20, True)]


def test_a_high_watermark_set_from_outside_tells_nothing():
    # A follower copies its leader's HW (maybe_update_high_watermark): no fetch parks on a follower's log.
    leader = make_log()
    leader.append_as_leader([batch(), batch(), batch()], 0)
    heard = Listener()
    follower = heard.log(segment_bytes=100)
    for copied in leader.active_segment.batches:
        follower.append_as_follower([copied])
    follower.maybe_update_high_watermark(30)
    assert heard.high_watermark == [] and heard.rolls == [(10, "segment.bytes"), (20, "segment.bytes")]


def test_truncation_forgets_the_segments_it_removes():
    heard = Listener()
    log = heard.log(segment_bytes=100)
    for _ in range(3):
        log.append_as_leader([batch()], 0)
    log.truncate_to(15)
    log.append_as_leader([batch(records=5)], 0)
    log.maybe_increment_high_watermark(log.log_end_offset_metadata)
    assert heard.high_watermark == [(10, False), (10, True)]


def test_explicit_roll_of_empty_active_segment_replaces_it():
    time = ManualTime(0)
    log = make_log(time)
    time.set(50)
    log.roll()
    assert len(log.segments) == 1
    assert log.active_segment.created_ms == 50


# -------------------------------------------------------------------------------------------------- read


def three_batch_log(**config) -> Log:
    log = make_log(**config)
    log.append_as_leader([batch(size=100), batch(size=150), batch(size=200)], 0)  # 0..9, 10..19, 20..29
    return log


def test_read_is_batch_aligned_at_start():
    log = three_batch_log()
    info = log.read(15, 10_000, LOG_END, min_one_message=True)
    assert info.fetch_offset_metadata == LogOffsetMetadata(15, 0, 100)
    assert [b.base_offset for b in info.records] == [10, 20]
    assert info.size_in_bytes == 350
    assert info.partial_batch is None


def test_read_is_byte_bounded_with_trailing_partial_batch():
    log = three_batch_log()
    info = log.read(0, 300, LOG_END, min_one_message=True)
    assert [b.base_offset for b in info.records] == [0, 10]
    assert info.size_in_bytes == 300
    assert info.partial_batch is not None and info.partial_batch.base_offset == 20
    exact = log.read(0, 250, LOG_END, min_one_message=True)
    assert exact.size_in_bytes == 250 and exact.partial_batch is None


def test_read_min_one_message_returns_whole_first_batch():
    log = three_batch_log()
    info = log.read(10, 20, LOG_END, min_one_message=True)
    assert [b.base_offset for b in info.records] == [10]
    assert info.size_in_bytes == 150
    assert not info.first_entry_incomplete


def test_read_without_min_one_message_flags_incomplete_first_entry():
    log = three_batch_log()
    info = log.read(10, 20, LOG_END, min_one_message=False)
    assert info.records == []
    assert info.size_in_bytes == 20
    assert info.first_entry_incomplete
    assert info.partial_batch is not None and info.partial_batch.base_offset == 10
    assert log.read(10, 0, LOG_END, min_one_message=False).size_in_bytes == 0


def test_read_follower_bounded_by_leo_consumer_by_hw():
    log = three_batch_log()
    log.maybe_increment_high_watermark(LogOffsetMetadata(20, 0, 250))
    follower = log.read(0, 10_000, LOG_END, True)
    consumer = log.read(0, 10_000, HW, True)
    assert follower.size_in_bytes == 450
    # UnifiedLog.read: HW reads never expose bytes beyond the HW position.
    assert consumer.size_in_bytes == 250
    assert [b.base_offset for b in consumer.records] == [0, 10]


def test_consumer_read_at_hw_returns_hw_metadata():
    log = three_batch_log()
    hw = LogOffsetMetadata(20, 0, 250)
    log.maybe_increment_high_watermark(hw)
    info = log.read(20, 10_000, HW, True)
    assert info.size_in_bytes == 0
    assert info.fetch_offset_metadata == hw


def test_read_at_hw_returns_the_hw_metadata_itself():
    # The HW may describe offset 20 as the end of segment 0 while segment 20 exists; a read at the HW
    # returns exactly that description (what a parked fetch then compares against).
    log = make_log(segment_bytes=200)
    log.append_as_leader([batch(), batch()], 0)
    end_of_first_segment = log.log_end_offset_metadata
    log.append_as_leader([batch()], 0)  # rolls at 20
    log.maybe_increment_high_watermark(end_of_first_segment)
    info = log.read(20, 1000, HW, True)
    assert info.fetch_offset_metadata == LogOffsetMetadata(20, 0, 200)


def test_consumer_read_between_hw_and_leo_is_empty_with_requested_offsets_metadata():
    log = three_batch_log()
    log.maybe_increment_high_watermark(LogOffsetMetadata(10, 0, 100))
    info = log.read(20, 10_000, HW, True)
    assert info.size_in_bytes == 0
    assert info.fetch_offset_metadata == LogOffsetMetadata(20, 0, 250)


def test_follower_read_at_leo_returns_leo_metadata():
    log = three_batch_log()
    info = log.read(30, 10_000, LOG_END, True)
    assert info.size_in_bytes == 0
    assert info.fetch_offset_metadata == log.log_end_offset_metadata == LogOffsetMetadata(30, 0, 450)


def test_read_out_of_range():
    log = three_batch_log()
    for offset in (31, -1):
        with pytest.raises(KafkaError) as e:
            log.read(offset, 100, LOG_END, True)
        assert e.value.error is Errors.OFFSET_OUT_OF_RANGE


def test_read_stays_within_one_segment():
    log = make_log(segment_bytes=250)
    log.append_as_leader([batch(), batch()], 0)
    log.append_as_leader([batch(), batch()], 0)  # rolled at 20
    info = log.read(0, 10_000, LOG_END, True)
    assert [b.base_offset for b in info.records] == [0, 10]
    assert log.read(20, 10_000, LOG_END, True).fetch_offset_metadata == LogOffsetMetadata(20, 20, 0)


def test_consumer_read_on_segment_after_hw_segment_reads_nothing():
    log = make_log(segment_bytes=250)
    log.append_as_leader([batch(), batch()], 0)
    log.maybe_increment_high_watermark(LogOffsetMetadata(20, 0, 200))
    log.append_as_leader([batch(), batch()], 0)
    # Fetch at 10 (< HW): reads up to the HW position in the old segment only.
    info = log.read(10, 10_000, HW, True)
    assert [b.base_offset for b in info.records] == [10]


# ------------------------------------------------------------------------------------------ high watermark


def test_high_watermark_is_monotonic_and_bounded_by_leo():
    log = three_batch_log()
    assert log.maybe_increment_high_watermark(LogOffsetMetadata(20, 0, 250)) == LogOffsetMetadata(0, 0, 0)
    assert log.maybe_increment_high_watermark(LogOffsetMetadata(10, 0, 100)) is None
    assert log.high_watermark == 20
    with pytest.raises(ValueError, match="exceeds the log end offset"):
        log.maybe_increment_high_watermark(LogOffsetMetadata(31, 0, 450))


def test_same_offset_on_newer_segment_counts_as_increase():
    # UnifiedLog.maybeIncrementHighWatermark: a newer segment counts as an increase
    log = make_log(segment_bytes=200)
    log.append_as_leader([batch(), batch()], 0)
    log.maybe_increment_high_watermark(LogOffsetMetadata(10, 0, 100))
    log.append_as_leader([batch()], 0)
    old = LogOffsetMetadata(20, 0, 200)
    assert log.maybe_increment_high_watermark(old) is not None
    assert log.maybe_increment_high_watermark(LogOffsetMetadata(20, 20, 0)) == old
    assert log.high_watermark_metadata == LogOffsetMetadata(20, 20, 0)
    # ...but the older-segment description of the same offset does not go back.
    assert log.maybe_increment_high_watermark(old) is None


def test_follower_hw_is_clamped_and_message_only():
    log = three_batch_log()
    assert log.maybe_update_high_watermark(25) == 25
    assert log.high_watermark_metadata == LogOffsetMetadata(25)
    assert log.maybe_update_high_watermark(25) is None
    assert log.maybe_update_high_watermark(99) == 30  # clamped to own LEO, full LEO metadata
    assert log.high_watermark_metadata == log.log_end_offset_metadata


def test_message_only_hw_is_materialised_for_consumer_reads():
    log = three_batch_log()
    log.update_high_watermark(20)
    assert log.high_watermark_metadata.message_offset_only
    info = log.read(0, 10_000, HW, True)
    assert info.size_in_bytes == 250
    assert log.high_watermark_metadata == LogOffsetMetadata(20, 0, 250)


# ------------------------------------------------------------------------------------ log start, truncate


def test_truncate_to_hw_for_restarting_follower():
    log = make_log(segment_bytes=250)
    log.append_as_leader([batch(), batch()], 0)
    log.append_as_leader([batch()], 1)  # rolls at 20
    log.append_as_leader([batch()], 1)
    log.update_high_watermark(10)
    assert log.truncate_to(log.high_watermark)
    assert log.log_end_offset == 10
    assert log.log_end_offset_metadata == LogOffsetMetadata(10, 0, 100)
    assert [s.base_offset for s in log.segments] == [0]
    assert log.high_watermark_metadata == log.log_end_offset_metadata
    assert log.latest_epoch == 0
    assert not log.truncate_to(10)
    # The follower resumes from 10.
    refetch = make_log()
    refetch.append_as_leader([batch(), batch(), batch()], 0)
    log.append_as_follower(list(refetch.active_segment.batches[1:]))
    assert log.log_end_offset == 30


def test_truncate_below_first_segment_restarts_log():
    log = make_log()
    log.append_as_leader([batch()], 0)
    log.maybe_increment_high_watermark(log.log_end_offset_metadata)
    log.maybe_increment_log_start_offset(10)
    log.delete_old_segments()
    log.append_as_leader([batch()], 0)
    assert log.truncate_to(5)
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (5, 5, 5)


def test_log_start_offset_never_passes_hw_and_drops_whole_segments():
    log = make_log(segment_bytes=200)
    for _ in range(3):
        log.append_as_leader([batch(), batch()], 0)  # segments at 0, 20, 40
    with pytest.raises(KafkaError):
        log.maybe_increment_log_start_offset(5)
    log.maybe_increment_high_watermark(LogOffsetMetadata(25, 20, 100))
    assert log.maybe_increment_log_start_offset(25)
    assert log.delete_old_segments() == 1
    assert [s.base_offset for s in log.segments] == [20, 40]
    with pytest.raises(KafkaError) as e:
        log.read(24, 100, LOG_END, True)
    assert e.value.error is Errors.OFFSET_OUT_OF_RANGE


def test_with_offsets_copies_every_field():
    original = RecordBatch(3, 120, 55, 9, "producer-1")
    stamped = original.with_offsets(40, 2)
    assert stamped == RecordBatch(3, 120, 55, 9, "producer-1", 40, 2)
    assert (stamped.last_offset, stamped.next_offset) == (42, 43)
    assert original.base_offset == -1
