"""What a run leaves to Python's cyclic garbage collector.

An object in a reference cycle is freed only when the collector walks it, and with it everything it holds: a
delayed fetch's context, its partition data, its response callback. The collector's passes over such
garbage took most of its time in the loop (benchmarks/README.md, "Speed at production size"). The simulator's
per-request objects are freed by reference counting alone; these tests hold it to that.
"""

from __future__ import annotations

import gc
import weakref
from collections import Counter

from kafkasim.run.engine import Engine
from kafkasim.timer import TaskCounter, TimerTask, TimerTaskEntry, TimerTaskList

from .support import consumer, producer, scenario


class _Held:
    """Something a task holds: freed with the task (a weak reference to a compiled class's interpreted subclass is
    not safe to call once it is gone, so the test watches what the task holds)."""


class _Task(TimerTask):
    def __init__(self, delay_ms: int) -> None:
        super().__init__(delay_ms)
        self.held = _Held()

    def run(self) -> None:
        pass


def test_a_cancelled_tasks_entry_is_freed_by_reference_counting() -> None:
    """TimerTaskList.remove unlinks an entry without linking it to itself (Kafka's sets its links to null):
    a self-link is a cycle, and the entry's task and all it holds would wait for the cyclic collector."""
    bucket = TimerTaskList(TaskCounter())
    task = _Task(10)
    bucket.add(TimerTaskEntry(task, 10))
    gone = weakref.ref(task.held)
    gc.disable()
    try:
        task.cancel()
        del task
        assert gone() is None, "the cancelled task is still alive: its entry is in a reference cycle"
    finally:
        gc.enable()


def test_a_run_leaves_next_to_no_cyclic_garbage() -> None:
    """acks=all produce waits in DelayedProduce, followers and a consumer long-poll in DelayedFetch (expired and
    completed): after the run, the collector finds under one kafkasim object per 100 requests to free."""
    s = scenario(duration="2s", topic={"partitions": 4},
                 producers=[producer("p1", rate="400/s")], consumers=[consumer("c1")])
    gc.collect()
    gc.disable()
    try:
        engine = Engine(s)
        requests = len(engine.run().requests)
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        garbage = Counter(type(o).__qualname__ for o in gc.garbage if type(o).__module__.startswith("kafkasim"))
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert requests > 1000
    assert sum(garbage.values()) < requests / 100, garbage.most_common(8)
