"""Writes notebooks/wheel_and_purgatory.ipynb: run
`uv run --extra dev python notebooks/make_wheel_and_purgatory.py` after editing.

The notebook is kept as this script so that its text can be reviewed and diffed as Python. It is stored
with its outputs, so that it reads well where it is viewed without running it: this script executes it
(a few seconds: no SimPy engine, only the timer, the purgatory and the broker on a hand-driven clock).
tests/notebooks/test_wheel_and_purgatory_notebook.py executes it again and checks the stored outputs are
the ones it gives today.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from notebook_builder import build_notebook, execute_notebook, write_notebook

NOTEBOOK = Path(__file__).resolve().parent / "wheel_and_purgatory.ipynb"

CELLS: list[tuple[str, str]] = [
    ("md", """\
# The timing wheel and the purgatory

A Kafka broker parks every request that cannot be answered yet — an `acks=all` produce waiting for the
followers, a fetch waiting for `fetch.min.bytes` — in a **purgatory** (`DelayedOperationPurgatory`),
and every parked request's timeout sits in one **hierarchical timing wheel** (`SystemTimer`). This
notebook drives kafkasim's copies of both by hand, on a `ManualTime` clock: no simulation engine, every
step visible.

1. Where the wheel puts a task, and how it cascades down the levels.
2. Why a cancelled (completed) task costs nothing: it leaves its bucket at once.
3. The purgatory's two-phase watch, and why `PurgatorySize` can exceed `NumDelayedOperations`.
4. A `DelayedProduce` and a `DelayedFetch` that complete, and two that expire, on a real partition.

[docs/timing-wheel.md](../docs/timing-wheel.md) shows the same wheel from the command line
(`kafkasim wheel`)."""),
    ("md", """\
## 1. Placement

Kafka's wheel has 20 buckets of 1 ms on level 1 (20 ms), and overflow levels whose tick is the whole
interval of the level below: 20 ms ticks (400 ms), 400 ms ticks (8 s), 8 s ticks (160 s).
`TimingWheel.add` puts a task in the first level whose window holds its expiration, in bucket
`expiration // tick % 20`; the bucket is due at the start of its range. `SystemTimer.locate` says where
a task sits: (level, bucket index, bucket due time)."""),
    ("code", """\
from kafkasim.timer import ManualTime, SystemTimer, TimerTask


class Task(TimerTask):
    \"\"\"A timer task that says when it runs.\"\"\"

    def __init__(self, name, delay_ms, time):
        super().__init__(delay_ms)
        self.name, self.time = name, time

    def run(self):
        print(f"{self.time.milliseconds():>6} ms  {self.name} runs")


time = ManualTime(0)
timer = SystemTimer("demo", time=time)  # Kafka's defaults: tick 1 ms, 20 buckets per level
tasks = [Task(f"{delay} ms", delay, time) for delay in (10, 25, 350, 450, 30_000)]
for task in tasks:
    timer.add(task)
for task in tasks:
    level, index, due = timer.locate(task)
    print(f"{task.name:>9}: level {level}, bucket {index:>2}, due at {due}")
print(f"size {timer.size} (tasks in buckets), {timer.queued_buckets} buckets in the delay queue")"""),
    ("md", """\
The 10 ms task sits in bucket index 10, the eleventh bucket. The 30 s task — a produce's default
`request.timeout.ms` — is on level 4, in the bucket [24 000, 32 000). Only buckets go into the timer's
`DelayQueue`, one entry per bucket however many tasks it holds.

## The cascade

When a bucket is due, `SystemTimer.advanceClock` moves every level's clock to that time and adds each of
its tasks again: it lands in a finer bucket, or runs if it is within one tick of its expiration. The
reaper (`ExpirationReaper`) calls it whenever the delay queue's head is due; here we play the reaper."""),
    ("code", """\
def reap(timer, time, until_ms):
    \"\"\"The expiration reaper: flush every bucket due up to `until_ms`, at its due time.\"\"\"
    while (due := timer.next_expiration_ms) is not None and due <= until_ms:
        time.set(max(due, time.milliseconds()))
        timer.advance_clock()
    time.set(until_ms)


for until in (20, 340, 400, 440, 450):
    reap(timer, time, until)
    where = {task.name: timer.locate(task) for task in tasks if timer.locate(task) is not None}
    print(f"{'':>6}    at {until}: {where}")"""),
    ("md", """\
The 450 ms task went level 3 → 2 → 1: at 400 into level 2's [440, 460), at 440 into level 1's
[450, 451). `kafkasim.timer.walkthrough.trace_schedule` records every step of such a run, and
`kafkasim wheel` prints it. Here a task skips a level on its way down: with 10 ms ticks and 8 buckets,
level 1 covers 80 ms, level 2 640 ms; a 700 ms task starts on level 3, and at 640 the remaining 60 ms
already fit level 1, so it goes there directly."""),
    ("code", """\
from rich.console import Console

from kafkasim.console.wheel import wheel_trace_lines
from kafkasim.timer.walkthrough import ScheduledAdd, ScheduledCancel, trace_schedule

console = Console(width=80, color_system=None, force_jupyter=False)
walk = trace_schedule([ScheduledAdd(700)], tick_ms=10, wheel_size=8)
console.print(wheel_trace_lines(walk, width=80))"""),
    ("md", """\
## 2. Cancel: the reason the purgatory moved to the wheel

A request that completes before its timeout must leave the timer. `DelayedOperation.forceComplete`
calls `TimerTask.cancel`, and `TimerTaskEntry.remove` unlinks the entry from its bucket's doubly linked
list: O(1), and `size` drops at once. The bucket stays in the delay queue until its time and is then
flushed empty. Kafka 0.8's purgatory kept each operation in a `java.util.DelayQueue` (a heap), which
cannot remove an element cheaply, so a completed operation stayed there until its timeout or the next
purge. Kafka 0.9 replaced it with the wheel (KAFKA-1989).

Here the 30 s task of section 1 completes at 1 000 ms:"""),
    ("code", """\
thirty_s = tasks[-1]
print("before:", timer.locate(thirty_s), f"size {timer.size}, {timer.queued_buckets} buckets queued")
reap(timer, time, 1_000)
thirty_s.cancel()
print("after: ", timer.locate(thirty_s), f"size {timer.size}, {timer.queued_buckets} buckets queued")
reap(timer, time, 40_000)
print(f"at {time.milliseconds()}: size {timer.size}, {timer.queued_buckets} buckets queued; nothing ran")"""),
    ("md", """\
The same with the walkthrough: two tasks share the level-2 bucket [20, 40); one completes at 5 ms
and the bucket's count drops from 2 to 1 while the delay queue keeps its single entry for the bucket."""),
    ("code", """\
walk = trace_schedule([ScheduledAdd(30), ScheduledAdd(25)], [ScheduledCancel(task=1, at_ms=5, completed=True)])
console.print(wheel_trace_lines(walk, width=80))"""),
    ("md", """\
## 3. The purgatory's two-phase watch

`DelayedOperationPurgatory.tryCompleteElseWatch(operation, keys)` checks the operation; if it cannot
complete, watches it on every key (a partition), **checks again**, and only then adds it to the timer.
The second check closes a race: a request handler thread appending to the partition calls
`checkAndComplete(key)` and finds nobody to wake if the append landed after the first check but before
the watch. Below, a toy operation waits for some bytes in a shared "log"; for operation B the append
happens exactly in that window (we trigger it from B's first check)."""),
    ("code", """\
from kafkasim.purgatory import DelayedOperation, DelayedOperationPurgatory


class WaitForBytes(DelayedOperation):
    \"\"\"Completes once `log['bytes']` reaches `needed`; prints every check.\"\"\"

    def __init__(self, name, needed, delay_ms, log, after_first_check=None):
        super().__init__(delay_ms)
        self.name, self.needed, self.log, self.after_first_check = name, needed, log, after_first_check
        self.checks = 0

    def try_complete(self):
        self.checks += 1
        ready = self.log["bytes"] >= self.needed
        print(f"  {self.name} check {self.checks}: {self.log['bytes']}/{self.needed} bytes, "
              f"{'complete' if ready else 'not yet'}")
        if ready:
            return self.force_complete()
        if self.checks == 1 and self.after_first_check is not None:
            self.after_first_check()  # another thread's append, before this operation is watched
        return False

    def on_complete(self):
        print(f"  {self.name} on_complete")

    def on_expiration(self):
        print(f"  {self.name} on_expiration (timed out)")

    def __repr__(self):
        return self.name


time = ManualTime(0)
purgatory = DelayedOperationPurgatory("Demo", time=time)
log = {"bytes": 0}


def append(n):
    log["bytes"] += n
    print(f"  append {n} bytes: checkAndComplete(tp-0) completed {purgatory.check_and_complete('tp-0')}")


def counts():
    print(f"  PurgatorySize (watched) {purgatory.watched}, NumDelayedOperations {purgatory.num_delayed}")


print("A arrives; the log is empty")
a = WaitForBytes("A", 100, 500, log)
purgatory.try_complete_else_watch(a, ["tp-0"])
print("  A sits in the timer at", purgatory.timer.locate(a))
counts()
print("an append at 5 ms completes A; it leaves the timer and the watch list")
time.set(5)
append(100)
counts()
print("B arrives; an append lands between its first check and its watch")
b = WaitForBytes("B", 200, 500, log, after_first_check=lambda: append(100))
purgatory.try_complete_else_watch(b, ["tp-0"])
counts()"""),
    ("md", """\
The append after B's first check found nobody watching (`completed 0`); B's second check saw the bytes
and completed it, without ever entering the timer. Without the second check B would have waited for its
whole timeout. B was already on the watch list of tp-0 and stays there, completed, until tp-0 is checked
again or a purge runs: that is why `PurgatorySize` (entries in watch lists) can exceed
`NumDelayedOperations` (operations in the timer). An operation watching two partitions shows it more
plainly: completed through one, it lingers in the other's list."""),
    ("code", """\
print("C watches tp-0 and tp-1")
c = WaitForBytes("C", 250, 500, log)
purgatory.try_complete_else_watch(c, ["tp-0", "tp-1"])
append(50)
counts()
print("  still watching tp-1:", purgatory.watchers("tp-1"), "completed:", c.is_completed)
print("purge (the reaper does it when enough completed operations may linger):",
      purgatory.purge_completed(), "removed")
counts()"""),
    ("md", """\
## 4. DelayedProduce and DelayedFetch on a real partition

Now the broker's own code: a `ReplicaManager` (broker 0) leading partition `orders-0`, with broker 1
as its follower, both in the ISR. Requests go in through `ReplicaManager.appendRecords` and
`ReplicaManager.fetchMessages`, exactly as the simulator's request handlers call them; at the end of
each request `tryCompleteActions` runs the purgatory checks the request's append made necessary."""),
    ("code", """\
from kafkasim.broker.alter_partition import ControllerAlterPartitionManager
from kafkasim.broker.config import KafkaConfig
from kafkasim.broker.fetch import FetchParams, PartitionData
from kafkasim.broker.records import RecordBatch, TopicPartition
from kafkasim.broker.replica_manager import ReplicaManager

TP = TopicPartition("orders", 0)
time = ManualTime(0)
rm = ReplicaManager(0, KafkaConfig(), time, alter_partition_manager=ControllerAlterPartitionManager())
log = rm.make_leader(TP, replicas=[0, 1]).log
key = rm.operation_key(TP)
batch_ids = iter(range(1, 1_000))


def produce(timeout_ms=30_000):
    \"\"\"An acks=all produce of one batch of 10 records (1 000 bytes).\"\"\"
    batch = RecordBatch(10, 1_000, time.milliseconds(), next(batch_ids), "producer-1")

    def respond(responses):
        r = responses[TP]
        print(f"{time.milliseconds():>6} ms  produce of offsets {r.base_offset}..{r.last_offset} "
              f"answered: {r.error.name}")

    rm.append_records(timeout_ms, -1, {TP: [batch]}, respond)
    rm.try_complete_actions()


def fetch(who, replica_id, offset, max_wait_ms=500, min_bytes=1):
    \"\"\"A fetch from `offset`: replica_id 1 is the follower, -1 a consumer (reads up to the HW).\"\"\"

    def respond(results):
        ((_, r),) = results
        records = sum(b.record_count for b in r.info.records)
        print(f"{time.milliseconds():>6} ms  {who}'s fetch from {offset} answered: {r.error.name}, "
              f"{records} records, HW {r.high_watermark}")

    params = FetchParams(replica_id, max_wait_ms, min_bytes, 1 << 20)
    rm.fetch_messages(params, [(TP, PartitionData(offset, 0, 1 << 20))], respond)
    rm.try_complete_actions()


def state():
    produce_ops = [op for op in rm.produce_purgatory.watchers(key) if not op.is_completed]
    fetch_ops = [op for op in rm.fetch_purgatory.watchers(key) if not op.is_completed]
    where = [rm.produce_purgatory.timer.locate(op) for op in produce_ops]
    where += [rm.fetch_purgatory.timer.locate(op) for op in fetch_ops]
    print(f"{'':>10}LEO {log.log_end_offset}, HW {log.high_watermark}; parked: {len(produce_ops)} produce, "
          f"{len(fetch_ops)} fetch; in the wheels at {where}")


def reaper(until_ms):
    \"\"\"Both purgatories' expiration reapers up to `until_ms`, each bucket at its due time.\"\"\"
    purgatories = (rm.produce_purgatory, rm.fetch_purgatory)
    while True:
        due = min((p.timer.next_expiration_ms for p in purgatories if p.timer.next_expiration_ms is not None),
                  default=None)
        if due is None or due > until_ms:
            break
        time.set(max(due, time.milliseconds()))
        for purgatory in purgatories:
            purgatory.advance_clock()
    time.set(until_ms)"""),
    ("md", """\
**A DelayedProduce completes.** An `acks=all` produce appends offsets 0..9 and waits in the produce
purgatory until the high watermark passes offset 9 (`DelayedProduce.tryComplete`: the partition's
`checkEnoughReplicasReachOffset`), with its 30 s timeout on level 4 of the wheel. The follower fetches
the batch at 3 ms; at 5 ms it fetches from offset 10, which tells the leader it has everything below 10:
the HW moves to 10 and the produce completes. That follower fetch itself finds nothing new, so it parks
in the fetch purgatory, a **DelayedFetch** waiting up to 500 ms (`replica.fetch.wait.max.ms`)."""),
    ("code", """\
produce()
state()
time.set(3)
fetch("follower", 1, 0)
state()
time.set(5)
fetch("follower", 1, 10)
state()"""),
    ("md", """\
**A DelayedFetch completes.** A consumer fetches from offset 10 at 7 ms; nothing is committed beyond the
HW, so it parks too. At 20 ms a second produce appends offsets 10..19: the new bytes on the log end
complete the follower's parked fetch at once (`DelayedFetch.tryComplete`, enough bytes between its fetch
offset and the log end offset). The consumer's fetch reads only up to the HW, which has not moved, so it
keeps waiting."""),
    ("code", """\
time.set(7)
fetch("consumer", -1, 10)
state()
time.set(20)
produce(timeout_ms=1_000)
state()"""),
    ("md", """\
**A DelayedFetch and a DelayedProduce expire.** Now the follower stops fetching (a long GC pause, say).
Nothing moves the HW: the consumer's fetch times out at 507 ms (7 + 500) and is answered with no
records; the produce times out at 1 020 ms (20 + 1 000) and is answered `REQUEST_TIMED_OUT` — its
records are in the leader's log, but not acknowledged as committed. Each expiry is the timer running the
operation (`DelayedOperation.run`: `forceComplete`, then `onExpiration`, which counts it in Kafka's
`ExpiresPerSec` meters)."""),
    ("code", """\
reaper(2_000)
state()
print(f"produce expirations {rm.metrics.produce_expires}, consumer fetch expirations "
      f"{rm.metrics.fetch_expires_consumer}, follower fetch expirations {rm.metrics.fetch_expires_follower}")"""),
    ("md", """\
## Where to go next

* `uv run kafkasim wheel --add 450 --complete T1@5` and the other commands of
  [docs/timing-wheel.md](../docs/timing-wheel.md) print a whole trace, step by step.
* The scenarios run the same purgatories inside the full broker: `scenarios/fetch_min_bytes_vs_max_wait.yaml`
  parks consumer fetches, `scenarios/acks_compared.yaml` parks `acks=all` produces, and a run's
  `purgatory.png` plots `PurgatorySize` and `NumDelayedOperations` over time."""),
]


def build() -> nbformat.NotebookNode:
    """The notebook's cells, without outputs."""
    return build_notebook(CELLS)


def main() -> None:
    write_notebook(NOTEBOOK, execute_notebook(build(), NOTEBOOK.parent))


if __name__ == "__main__":
    main()
