"""TimerTaskList and TimerTaskEntry: Kafka's TimerTaskListTest, plus the list's own rules (TimerTaskList,
TimerTaskEntry, TimerTask.setTimerTaskEntry)."""

from __future__ import annotations

from kafkasim.timer import TaskCounter, TimerTask, TimerTaskEntry, TimerTaskList


class Task(TimerTask):
    def run(self) -> None:
        pass


def live(bucket: TimerTaskList) -> int:
    seen: list[TimerTask] = []
    bucket.foreach(seen.append)
    return len(seen)


def test_kafka_test_all_moving_tasks_between_lists_keeps_the_shared_count() -> None:
    counter = TaskCounter()
    list1, list2, list3 = TimerTaskList(counter), TimerTaskList(counter), TimerTaskList(counter)
    tasks = []
    for i in range(1, 11):
        task = Task(0)
        list1.add(TimerTaskEntry(task, 10))
        assert counter.value == i
        tasks.append(task)

    # A new entry for the same task evicts the old one from its list: the count does not change.
    for task in tasks[:4]:
        before = counter.value
        list2.add(TimerTaskEntry(task, 10))
        assert counter.value == before
    assert (live(list1), live(list2)) == (6, 4)
    for task in tasks[4:]:
        before = counter.value
        list3.add(TimerTaskEntry(task, 10))
        assert counter.value == before
    assert (live(list1), live(list2), live(list3)) == (0, 4, 6)
    assert counter.value == 10

    list1.foreach(TimerTask.cancel)
    assert (live(list1), live(list2), live(list3)) == (0, 4, 6)
    list2.foreach(TimerTask.cancel)
    assert (live(list1), live(list2), live(list3)) == (0, 0, 6)
    list3.foreach(TimerTask.cancel)
    assert (live(list1), live(list2), live(list3)) == (0, 0, 0)
    assert counter.value == 0
    assert all(task.is_cancelled for task in tasks)


def test_len_counts_live_entries_and_remove_is_o1_unlink() -> None:
    counter = TaskCounter()
    bucket = TimerTaskList(counter)
    tasks = [Task(0) for _ in range(5)]
    entries = [TimerTaskEntry(t, 7) for t in tasks]
    for entry in entries:
        bucket.add(entry)
    tasks[2].cancel()
    assert len(bucket) == 4 and counter.value == 4
    assert [e.timer_task for e in bucket.entries()] == [tasks[0], tasks[1], tasks[3], tasks[4]]
    assert entries[2].list is None and entries[2].cancelled


def test_remove_of_an_entry_in_another_list_does_nothing() -> None:
    counter = TaskCounter()
    a, b = TimerTaskList(counter), TimerTaskList(counter)
    entry = TimerTaskEntry(Task(0), 3)
    a.add(entry)
    b.remove(entry)
    assert entry.list is a and len(a) == 1 and counter.value == 1


def test_set_expiration_reports_only_changes() -> None:
    bucket = TimerTaskList(TaskCounter())
    assert bucket.expiration == -1
    assert bucket.set_expiration(20) is True
    assert bucket.set_expiration(20) is False
    assert bucket.set_expiration(40) is True
    assert bucket.expiration == 40


def test_flush_pops_head_first_decrements_then_resets_expiration() -> None:
    counter = TaskCounter()
    bucket = TimerTaskList(counter)
    tasks = [Task(0) for _ in range(3)]
    for i, task in enumerate(tasks):
        bucket.add(TimerTaskEntry(task, 100 + i))
    bucket.set_expiration(100)
    seen: list[tuple[int, int]] = []

    def reinsert(entry: TimerTaskEntry) -> None:
        # Kafka: remove (counter -1) happens before f is called.
        assert entry.list is None
        seen.append((entry.expiration_ms, counter.value))

    bucket.flush(reinsert)
    assert seen == [(100, 2), (101, 1), (102, 0)]
    assert bucket.expiration == -1 and len(bucket) == 0


def test_foreach_skips_nothing_when_the_callback_cancels_the_current_task() -> None:
    counter = TaskCounter()
    bucket = TimerTaskList(counter)
    tasks = [Task(0) for _ in range(4)]
    for task in tasks:
        bucket.add(TimerTaskEntry(task, 5))
    visited: list[TimerTask] = []

    def cancel_and_record(task: TimerTask) -> None:
        visited.append(task)
        task.cancel()

    bucket.foreach(cancel_and_record)
    assert visited == tasks and len(bucket) == 0 and counter.value == 0


def test_entry_cancelled_iff_it_is_not_the_tasks_current_entry() -> None:
    task = Task(0)
    assert task.is_cancelled  # Kafka: no entry yet reads as cancelled
    first = TimerTaskEntry(task, 1)
    assert not first.cancelled and not task.is_cancelled
    second = TimerTaskEntry(task, 2)
    assert first.cancelled and not second.cancelled
    task.cancel()
    assert second.cancelled and task.is_cancelled
