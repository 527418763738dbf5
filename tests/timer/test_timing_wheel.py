"""TimingWheel: Kafka's TimingWheelTest (tick 10, size 5, start 1000) and TimingWheel.add / advanceClock /
addOverflowWheel."""

from __future__ import annotations

import pytest

from kafkasim.timer import DelayQueue, TaskCounter, TimerTask, TimerTaskEntry, TimingWheel

START, TICK, SIZE = 1000, 10, 5


class Task(TimerTask):
    def run(self) -> None:
        pass


@pytest.fixture
def parts() -> tuple[TimingWheel, TaskCounter, DelayQueue]:
    counter, queue = TaskCounter(), DelayQueue()
    return TimingWheel(TICK, SIZE, START, counter, queue), counter, queue


def entry(expiration_ms: int) -> TimerTaskEntry:
    return TimerTaskEntry(Task(0), expiration_ms)


def test_add_valid_task(parts: tuple[TimingWheel, TaskCounter, DelayQueue]) -> None:
    wheel, counter, queue = parts
    assert wheel.add(entry(START + 2 * TICK))
    assert len(queue) == 1 and counter.value == 1


def test_add_expired_task_is_refused(parts: tuple[TimingWheel, TaskCounter, DelayQueue]) -> None:
    wheel, counter, queue = parts
    assert not wheel.add(entry(START - 1))
    assert counter.value == 0 and len(queue) == 0


def test_add_cancelled_task_is_refused(parts: tuple[TimingWheel, TaskCounter, DelayQueue]) -> None:
    wheel, counter, _ = parts
    e = entry(START + 2 * TICK)
    e.timer_task.cancel()
    assert not wheel.add(e)
    assert e.timer_task.is_cancelled and counter.value == 0


def test_task_in_current_tick_is_expired(parts: tuple[TimingWheel, TaskCounter, DelayQueue]) -> None:
    wheel, _, _ = parts
    assert not wheel.add(entry(START + 5))
    assert not wheel.add(entry(START + TICK - 1))
    assert wheel.add(entry(START + TICK))


def test_advance_clock_within_a_tick_does_not_move(parts: tuple[TimingWheel, TaskCounter, DelayQueue]) -> None:
    wheel, _, _ = parts
    wheel.advance_clock(START + 5)
    assert wheel.current_time_ms == START


def test_advance_clock_rounds_down_to_a_tick(parts: tuple[TimingWheel, TaskCounter, DelayQueue]) -> None:
    wheel, _, _ = parts
    wheel.advance_clock(START + TICK + 7)
    assert wheel.current_time_ms == START + TICK


def test_start_is_rounded_down_to_a_tick() -> None:
    assert TimingWheel(10, 5, 1234, TaskCounter(), DelayQueue()).current_time_ms == 1230


def test_overflow_wheel_is_created_once_with_parent_interval_as_tick(
    parts: tuple[TimingWheel, TaskCounter, DelayQueue],
) -> None:
    wheel, _, _ = parts
    assert wheel.overflow_wheel is None
    interval = TICK * SIZE
    assert wheel.add(entry(START + interval + TICK))
    overflow = wheel.overflow_wheel
    assert overflow is not None
    assert overflow.tick_ms == interval and overflow.interval == interval * SIZE and overflow.level == 2
    assert wheel.add(entry(START + interval + TICK + 1))
    assert wheel.overflow_wheel is overflow


def test_overflow_wheel_starts_at_the_parents_current_time_not_the_original_start(
    parts: tuple[TimingWheel, TaskCounter, DelayQueue],
) -> None:
    # TimingWheel.addOverflowWheel: start = parent's current wheel time at creation.
    wheel, _, _ = parts
    wheel.advance_clock(START + 3 * TICK + 4)
    assert wheel.add(entry(START + 3 * TICK + TICK * SIZE + 1))
    overflow = wheel.overflow_wheel
    assert overflow is not None
    assert overflow.current_time_ms == (START + 3 * TICK) - (START + 3 * TICK) % (TICK * SIZE)


def test_advance_clock_moves_the_overflow_wheel(parts: tuple[TimingWheel, TaskCounter, DelayQueue]) -> None:
    wheel, _, _ = parts
    interval = TICK * SIZE
    wheel.add(entry(START + interval + TICK))
    wheel.advance_clock(START + interval + 10)
    assert wheel.current_time_ms == START + interval + 10
    overflow = wheel.overflow_wheel
    assert overflow is not None
    assert overflow.current_time_ms == START + interval


def test_bucket_expiration_is_the_start_of_its_range_and_is_queued_once(
    parts: tuple[TimingWheel, TaskCounter, DelayQueue],
) -> None:
    wheel, counter, queue = parts
    assert wheel.add(entry(1027))
    assert wheel.add(entry(1021))  # same bucket [1020, 1030)
    bucket = wheel.bucket((1027 // TICK) % SIZE)
    assert bucket.expiration == 1020 and len(bucket) == 2
    assert len(queue) == 1  # TimerTaskList.setExpiration: offered only when its expiration changed
    assert counter.value == 2
