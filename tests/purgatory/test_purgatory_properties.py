"""Property: under random watch / complete / check / cancel / advance schedules the purgatory completes
every operation at most once (on_complete before on_expiration, expiry exactly at the timeout), and its
watch lists, `watched`, `num_delayed` and estimated total match a plain reference model of Kafka's
tryCompleteElseWatch, checkAndComplete and Watchers."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from kafkasim.purgatory import DelayedOperationPurgatory
from kafkasim.timer import ManualTime

from .support import Op

KEYS = ("a", "b", "c", "d")


@dataclass
class Model:
    purge_interval: int
    watch: dict[str, list[int]] = field(default_factory=dict)
    in_timer: dict[int, int] = field(default_factory=dict)  # op -> expiration
    completed: set[int] = field(default_factory=set)
    completable: set[int] = field(default_factory=set)
    estimated: int = 0
    log: list[tuple[int, str, int]] = field(default_factory=list)

    def complete(self, ident: int, now: int) -> None:
        self.completed.add(ident)
        self.in_timer.pop(ident, None)
        self.log.append((ident, "complete", now))

    def try_complete_else_watch(self, ident: int, keys: list[str], delay: int, now: int) -> bool:
        if ident in self.completable:
            self.complete(ident, now)
            return True
        for key in keys:
            self.watch.setdefault(key, []).append(ident)
        self.estimated += 1
        self.in_timer[ident] = now + delay
        return False

    def check_and_complete(self, key: str, now: int) -> int:
        kept, count = [], 0
        for ident in self.watch.get(key, []):
            if ident in self.completed:
                continue
            if ident in self.completable:
                self.complete(ident, now)
                count += 1
                continue
            kept.append(ident)
        if kept:
            self.watch[key] = kept
        else:
            self.watch.pop(key, None)
        return count

    def cancel_for_key(self, key: str) -> list[int]:
        cancelled = self.watch.pop(key, [])
        for ident in cancelled:
            self.in_timer.pop(ident, None)
        return cancelled

    def advance_clock(self, now: int) -> None:
        for ident, expiration in sorted(self.in_timer.items(), key=lambda item: (item[1], item[0])):
            if expiration <= now:
                self.complete(ident, now)
                self.log.append((ident, "expire", now))
        if self.estimated - len(self.in_timer) > self.purge_interval:
            self.estimated = len(self.in_timer)
            for key in list(self.watch):
                self.watch[key] = [i for i in self.watch[key] if i not in self.completed]
                if not self.watch[key]:
                    del self.watch[key]


steps = st.lists(
    st.one_of(
        st.tuples(st.just("watch"), st.lists(st.sampled_from(KEYS), min_size=1, max_size=3, unique=True),
                  st.integers(1, 300), st.booleans()),
        st.tuples(st.just("completable"), st.integers(0, 30)),
        st.tuples(st.just("force"), st.integers(0, 30)),
        st.tuples(st.just("check"), st.sampled_from(KEYS)),
        st.tuples(st.just("cancel"), st.sampled_from(KEYS)),
        st.tuples(st.just("advance"), st.integers(0, 250)),
    ),
    max_size=50,
)


@settings(max_examples=150, deadline=None)
@given(purge_interval=st.integers(0, 4), schedule=steps)
def test_purgatory_matches_the_reference_model(purge_interval: int, schedule: list[tuple]) -> None:
    time = ManualTime(0)
    log: list[tuple[int, str, int]] = []
    purgatory = DelayedOperationPurgatory("prop", time=time, purge_interval=purge_interval)
    model = Model(purge_interval)
    ops: list[Op] = []
    deadlines: list[int] = []

    def reap(target: int) -> None:
        while (t := purgatory.timer.next_expiration_ms) is not None and t <= target:
            time.set(max(t, time.milliseconds()))
            purgatory.advance_clock()
            model.advance_clock(time.milliseconds())
        time.set(target)
        purgatory.advance_clock()
        model.advance_clock(target)

    for step in schedule + [("advance", 10_000)]:
        now = time.milliseconds()
        kind = step[0]
        if kind == "watch":
            _, keys, delay, ready = step
            op = Op(len(ops), delay, time, log)
            ops.append(op)
            deadlines.append(now + delay)
            if ready:
                op.completable = True
                model.completable.add(op.ident)
            expected = model.try_complete_else_watch(op.ident, keys, delay, now)
            assert purgatory.try_complete_else_watch(op, keys) is expected
        elif kind in ("completable", "force") and step[1] < len(ops):
            op = ops[step[1]]
            op.completable = True
            model.completable.add(op.ident)
            if kind == "force":
                # Completion from outside the purgatory (e.g. via another purgatory's key).
                expected_done = op.ident not in model.completed
                if expected_done:
                    model.complete(op.ident, now)
                assert op.try_complete() is expected_done
        elif kind == "check":
            assert purgatory.check_and_complete(step[1]) == model.check_and_complete(step[1], now)
        elif kind == "cancel":
            assert [op.ident for op in purgatory.cancel_for_key(step[1])] == model.cancel_for_key(step[1])
        elif kind == "advance":
            reap(now + step[1])

        assert sorted(log) == sorted(model.log)
        for key in KEYS:
            assert [op.ident for op in purgatory.watchers(key)] == model.watch.get(key, [])
        assert purgatory.watched == sum(len(v) for v in model.watch.values())
        assert purgatory.num_delayed == len(model.in_timer)
        assert purgatory.estimated_total_operations == model.estimated

    # Exactly once; a timeout reports on_complete then on_expiration, exactly at the deadline.
    for op in ops:
        events = [(kind, at) for ident, kind, at in log if ident == op.ident]
        assert [k for k, _ in events] in ([], ["complete"], ["complete", "expire"])
        if len(events) == 2:
            assert events[0][1] == events[1][1] == deadlines[op.ident]
