"""Kafka's hierarchical timing wheel (server-common `util.timer`), single-threaded and clock-agnostic.

Plain synchronous Python: time comes in through a `Time` object, nothing here imports SimPy.
"""

from kafkasim.timer.delay_queue import DelayQueue
from kafkasim.timer.system_timer import SystemTimer, run_task
from kafkasim.timer.time import ManualTime, Time
from kafkasim.timer.timer_task import TimerTask
from kafkasim.timer.timer_task_entry import TimerTaskEntry
from kafkasim.timer.timer_task_list import TaskCounter, TimerTaskList
from kafkasim.timer.timing_wheel import TimingWheel
from kafkasim.timer.trace import (
    BucketExpired,
    TaskCancelled,
    TaskDropped,
    TaskExecuted,
    TaskPlaced,
    TimerEvent,
    TracedSystemTimer,
)

__all__ = [
    "BucketExpired",
    "DelayQueue",
    "ManualTime",
    "SystemTimer",
    "TaskCancelled",
    "TaskCounter",
    "TaskDropped",
    "TaskExecuted",
    "TaskPlaced",
    "Time",
    "TimerEvent",
    "TimerTask",
    "TimerTaskEntry",
    "TimerTaskList",
    "TimingWheel",
    "TracedSystemTimer",
    "run_task",
]
