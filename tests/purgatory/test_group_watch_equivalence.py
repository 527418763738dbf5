"""Equivalence: watching a KeyGroup gives exactly what watching list(group) gives.

One random history runs on two purgatories: in one, the operations parked on a group watch the
`KeyGroup`; in the other, the same operations watch `list(group)` (Kafka's per-key appends). The history
mixes explicit-key watches, several shared groups (new ones appear, some are released and some watched
again), operations that complete when told to, on their n-th try, or by force from outside, timeouts via
the timer, purges (by `advance_clock`'s rule and explicitly), `cancel_for_key`, inspections, and completion
callbacks that re-enter the purgatory (watch a new operation on the same group or keys, check or cancel
another key). After every step the two must agree on every try and completion, in order, every return
value, `watched`, `num_delayed` and `estimated_total_operations`; at the end on `watchers(key)` of every key.
"""

from __future__ import annotations

import random
from collections.abc import Hashable
from dataclasses import dataclass, field

import pytest

from kafkasim.purgatory import (
    PURGATORY_TIMER_KINDS,
    DelayedOperation,
    DelayedOperationPurgatory,
    GroupWatchStrategy,
    KeyGroup,
    PurgatoryTimerKind,
    new_purgatory_timer,
)
from kafkasim.purgatory.group_watchers import CompletedRun, GroupWatch, GroupWatchers
from kafkasim.purgatory.watchers_with_runs import WatchersWithRuns
from kafkasim.timer import ManualTime

KEYS = tuple(f"k{i}" for i in range(8))

KeySpec = tuple[str, int] | tuple[str, tuple[str, ...]]  # ("group", index) or ("keys", keys)


@dataclass(frozen=True)
class OpSpec:
    ident: int
    delay_ms: int
    keys: KeySpec
    ready: bool  # completable from the start
    complete_on_try: int  # completes on its n-th try (0: never by itself)
    on_complete: tuple[str, object] | None  # ("watch", OpSpec) | ("check", key) | ("cancel", key)


@dataclass
class World:
    """One purgatory and everything the history does to it."""

    use_groups: bool
    purgatory: DelayedOperationPurgatory
    time: ManualTime
    groups: list[KeyGroup] = field(default_factory=list)
    ops: dict[int, EqOp] = field(default_factory=dict)
    log: list[tuple[object, ...]] = field(default_factory=list)

    def watch(self, spec: OpSpec) -> bool:
        op = EqOp(spec, self)
        self.ops[spec.ident] = op
        kind, value = spec.keys
        if kind == "group":
            assert isinstance(value, int)
            group = self.groups[value]
            keys: KeyGroup | list[str] = group if self.use_groups else [str(key) for key in group]
        else:
            assert isinstance(value, tuple)
            keys = list(value)
        result = self.purgatory.try_complete_else_watch(op, keys)
        self.log.append(("watched", spec.ident, result))
        return result


class EqOp(DelayedOperation):
    def __init__(self, spec: OpSpec, world: World) -> None:
        super().__init__(spec.delay_ms)
        self.spec = spec
        self.world = world
        self.completable = spec.ready
        self.tries = 0

    def try_complete(self) -> bool:
        self.tries += 1
        self.world.log.append(("try", self.spec.ident))
        if self.completable or self.tries == self.spec.complete_on_try:
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        world = self.world
        world.log.append(("complete", self.spec.ident, world.time.milliseconds()))
        action = self.spec.on_complete
        if action is None:
            return
        kind, arg = action
        if kind == "watch":
            assert isinstance(arg, OpSpec)
            world.watch(arg)
        elif kind == "check":
            world.log.append(("nested check", arg, world.purgatory.check_and_complete(arg)))
        else:
            world.log.append(("nested cancel", arg, [op_ident(op) for op in world.purgatory.cancel_for_key(arg)]))

    def on_expiration(self) -> None:
        self.world.log.append(("expire", self.spec.ident, self.world.time.milliseconds()))


def op_ident(op: DelayedOperation) -> int:
    assert isinstance(op, EqOp)
    return op.spec.ident


class History:
    """Draws the random history; both worlds replay the same steps."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.next_ident = 0
        self.groups = 0

    def key_spec(self, parent: KeySpec | None = None) -> KeySpec:
        rng = self.rng
        if parent is not None and rng.random() < 0.6:
            return parent
        if self.groups and rng.random() < 0.65:
            return ("group", rng.randrange(self.groups))
        keys = rng.sample(KEYS, rng.randint(1, 4))
        if rng.random() < 0.1:
            keys.append(keys[0])  # Kafka's lists may name a key twice
        return ("keys", tuple(keys))

    def op_spec(self, depth: int = 0, parent: KeySpec | None = None) -> OpSpec:
        rng = self.rng
        ident = self.next_ident
        self.next_ident += 1
        keys = self.key_spec(parent)
        on_complete: tuple[str, object] | None = None
        roll = rng.random()
        if roll < 0.25 and depth < 2:
            on_complete = ("watch", self.op_spec(depth + 1, keys))
        elif roll < 0.33:
            on_complete = ("check", rng.choice(KEYS))
        elif roll < 0.36:
            on_complete = ("cancel", rng.choice(KEYS))
        return OpSpec(
            ident=ident,
            delay_ms=rng.randint(1, 400),
            keys=keys,
            ready=rng.random() < 0.1,
            complete_on_try=rng.choice((0, 0, 0, 1, 2, 2, 3, 4)),
            on_complete=on_complete,
        )

    def step(self) -> tuple[object, ...]:
        rng = self.rng
        roll = rng.random()
        if roll < 0.05 or not self.groups:
            size = rng.randint(1, len(KEYS))
            self.groups += 1
            return ("group", tuple(rng.sample(KEYS, size)))
        if roll < 0.35:
            return ("watch", self.op_spec())
        if roll < 0.45 and self.next_ident:
            return ("completable", rng.randrange(self.next_ident))
        if roll < 0.5 and self.next_ident:
            return ("force", rng.randrange(self.next_ident))
        if roll < 0.72:
            return ("check", rng.choice(KEYS))
        if roll < 0.76:
            return ("cancel", rng.choice(KEYS))
        if roll < 0.8:
            return ("inspect", rng.choice(KEYS))
        if roll < 0.83:
            return ("purge",)
        if roll < 0.86:
            return ("release", rng.randrange(self.groups))
        return ("advance", rng.choice((0, 1, 5, 20, 50, 150)))


def reap(world: World, until_ms: int) -> None:
    purgatory, time = world.purgatory, world.time
    while (t := purgatory.timer.next_expiration_ms) is not None and t <= until_ms:
        time.set(max(t, time.milliseconds()))
        world.log.append(("advance", purgatory.advance_clock()))
    time.set(until_ms)
    world.log.append(("advance", purgatory.advance_clock()))


def apply(world: World, step: tuple[object, ...]) -> None:
    purgatory, log = world.purgatory, world.log
    kind = step[0]
    if kind == "group":
        keys = step[1]
        assert isinstance(keys, tuple)
        world.groups.append(KeyGroup(keys))
    elif kind == "watch":
        spec = step[1]
        assert isinstance(spec, OpSpec)
        world.watch(spec)
    elif kind in ("completable", "force"):
        op = world.ops.get(int(str(step[1])))
        if op is not None:
            op.completable = True
            if kind == "force":
                log.append(("force", op.spec.ident, op.force_complete()))
    elif kind == "check":
        log.append(("check", step[1], purgatory.check_and_complete(step[1])))
    elif kind == "cancel":
        log.append(("cancel", step[1], [op_ident(op) for op in purgatory.cancel_for_key(step[1])]))
    elif kind == "inspect":
        log.append(("inspect", step[1], [op_ident(op) for op in purgatory.watchers(step[1])]))
    elif kind == "purge":
        log.append(("purge", purgatory.purge_completed()))
    elif kind == "release":
        index = int(str(step[1]))
        strategy = purgatory.group_watch_strategy
        if strategy is not None:
            strategy.release_group(world.groups[index])
    else:
        reap(world, world.time.milliseconds() + int(str(step[1])))


def new_world(use_groups: bool, timer_kind: PurgatoryTimerKind, purge_interval: int) -> World:
    time = ManualTime(0)
    timer = new_purgatory_timer(timer_kind, "eq", time)
    # The reference is Kafka's purgatory as it is, without group watches.
    strategy = GroupWatchStrategy() if use_groups else None
    return World(
        use_groups, DelayedOperationPurgatory("eq", timer, purge_interval=purge_interval, group_watch_strategy=strategy),
        time,
    )


def assert_same(grouped: World, plain: World, where: str) -> None:
    assert grouped.log == plain.log, where
    g, p = grouped.purgatory, plain.purgatory
    assert g.watched == p.watched, where
    assert g.num_delayed == p.num_delayed, where
    assert g.estimated_total_operations == p.estimated_total_operations, where


def run_history(seed: int, timer_kind: PurgatoryTimerKind, steps: int = 120) -> tuple[World, World]:
    rng = random.Random(seed)
    history = History(rng)
    purge_interval = rng.randint(0, 6)
    grouped = new_world(True, timer_kind, purge_interval)
    plain = new_world(False, timer_kind, purge_interval)
    for number in range(steps):
        step = history.step()
        apply(grouped, step)
        apply(plain, step)
        assert_same(grouped, plain, f"seed {seed}, step {number}: {step}")
    for world in (grouped, plain):
        reap(world, world.time.milliseconds() + 1_000)
    assert_same(grouped, plain, f"seed {seed}, after the last timeout")
    for key in KEYS:
        assert [op_ident(op) for op in grouped.purgatory.watchers(key)] == [
            op_ident(op) for op in plain.purgatory.watchers(key)
        ], f"seed {seed}, watchers({key!r})"
    assert grouped.purgatory.watched == plain.purgatory.watched
    return grouped, plain


@pytest.mark.parametrize("timer_kind", PURGATORY_TIMER_KINDS)
def test_group_watches_behave_as_watching_every_key(timer_kind: PurgatoryTimerKind) -> None:
    tries = completions = 0
    for seed in range(300):
        grouped, _ = run_history(seed, timer_kind)
        tries += sum(1 for event in grouped.log if event[0] == "try")
        completions += sum(1 for event in grouped.log if event[0] == "complete")
    # The histories do exercise the purgatory (not vacuous).
    assert tries > 20_000 and completions > 5_000


@pytest.mark.pure_only
def test_the_histories_reach_the_cases_that_need_care(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each delicate path of the group purgatory runs many times in these seeds: a group operation placed
    before explicit operations watched after it, a group watched during a pass over one of its keys,
    completed operations placed as runs and runs read back (a nested cancel or an inspection), entries of
    completed operations purged before they were placed, released groups forgotten."""
    seen = {
        "merged": 0,
        "placed during a pass": 0,
        "runs placed": 0,
        "runs read back": 0,
        "purged from a group": 0,
        "forgotten": 0,
    }
    watch_in_order = WatchersWithRuns.watch_in_order
    materialize_now = GroupWatchStrategy._materialize_now
    purge_group = GroupWatchers.purge_completed
    unindex = GroupWatchStrategy._unindex_group
    watch_all = WatchersWithRuns.watch_all
    run_operations = CompletedRun.operations

    def counting_watch_in_order(self: WatchersWithRuns, operations: list[DelayedOperation]) -> None:
        if len(self) and max(op._watch_seq for op in self) > operations[0]._watch_seq:
            seen["merged"] += 1
        watch_in_order(self, operations)

    def counting_materialize_now(self: GroupWatchStrategy, key: Hashable, watch: GroupWatch) -> None:
        seen["placed during a pass"] += 1
        materialize_now(self, key, watch)

    def counting_purge(self: GroupWatchers) -> int:
        removed = purge_group(self)
        seen["purged from a group"] += removed > 0
        return removed

    def counting_unindex(self: GroupWatchStrategy, group_watchers: GroupWatchers) -> None:
        seen["forgotten"] += 1
        unindex(self, group_watchers)

    def counting_watch_all(self: WatchersWithRuns, operations: list[DelayedOperation]) -> None:
        seen["runs placed"] += sum(isinstance(op, CompletedRun) for op in operations)
        watch_all(self, operations)

    def counting_run_operations(self: CompletedRun) -> list[DelayedOperation]:
        seen["runs read back"] += 1
        return run_operations(self)

    monkeypatch.setattr(WatchersWithRuns, "watch_all", counting_watch_all)
    monkeypatch.setattr(CompletedRun, "operations", counting_run_operations)
    monkeypatch.setattr(WatchersWithRuns, "watch_in_order", counting_watch_in_order)
    monkeypatch.setattr(GroupWatchStrategy, "_materialize_now", counting_materialize_now)
    monkeypatch.setattr(GroupWatchers, "purge_completed", counting_purge)
    monkeypatch.setattr(GroupWatchStrategy, "_unindex_group", counting_unindex)
    for seed in range(100):
        run_history(seed, "timing_wheel")
    assert min(seen.values()) >= 20, seen
