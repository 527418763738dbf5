"""CompletedRun: completed group watches placed in a key's Watchers in one step behave, in that list, as
the completed operations they stand for would (Kafka's Watchers holds each of them)."""

from __future__ import annotations

from kafkasim.purgatory import DelayedOperation, KeyGroup
from kafkasim.purgatory.group_watchers import CompletedRun, GroupWatch, GroupWatchers
from kafkasim.purgatory.watchers_with_runs import WatchersWithRuns


class Op(DelayedOperation):
    def __init__(self, name: str, seq: int) -> None:
        super().__init__(1000)
        self.name = name
        self._watch_seq = seq
        self.then: list[object] = []  # what on_complete does, set by the test

    def try_complete(self) -> bool:
        return self.force_complete()

    def on_complete(self) -> None:
        for action in self.then:
            assert callable(action)
            action()

    def on_expiration(self) -> None:
        pass


def completed_group_watches(seqs: list[int]) -> tuple[GroupWatchers, list[Op]]:
    """A group whose watches at `seqs` all completed and moved to its completed list."""
    group_watchers = GroupWatchers(KeyGroup(["k"]))
    ops = []
    for seq in seqs:
        op = Op(f"done{seq}", seq)
        op.force_complete()
        group_watchers.watches.append(GroupWatch(op, seq))
        ops.append(op)
    live, completed = group_watchers.take_after(0)
    assert live == [] and completed == len(seqs)
    return group_watchers, ops


def test_a_run_lists_counts_and_cancels_as_its_operations() -> None:
    group_watchers, ops = completed_group_watches([2, 3, 5])
    run = CompletedRun([group_watchers], 1, 6, 3)
    first = Op("first", 1)
    watchers = WatchersWithRuns("k")
    watchers.watch_all([first, run])
    assert len(watchers) == 4
    assert list(watchers) == [first, *ops]
    assert watchers.cancel() == [first, *ops] and len(watchers) == 0


def test_a_pass_that_ends_inside_a_run_keeps_its_remaining_operations() -> None:
    # The outer pass has 4 turns: `a`, then the 3 completed operations after it. `a`'s completion runs a
    # nested pass (which drops those 3) and adds 5 completed operations: the outer pass has 3 turns left
    # for them, so Kafka's drops 3 and leaves 2, and so must a pass meeting one run standing for the 5.
    def build(as_run: bool) -> tuple[WatchersWithRuns, list[Op]]:
        group_watchers, ops = completed_group_watches([2, 3, 4, 10, 11, 12, 13, 14])
        watchers = WatchersWithRuns("k")
        a = Op("a", 1)
        first_three, next_five = ops[:3], ops[3:]
        watchers.watch_all([a, CompletedRun([group_watchers], 1, 5, 3)] if as_run else [a, *first_three])
        later: list[DelayedOperation] = (
            [CompletedRun([group_watchers], 9, 15, 5)] if as_run else list(next_five)
        )
        a.then = [watchers.try_complete_watched, lambda: watchers.watch_all(later)]
        return watchers, next_five

    results = []
    for as_run in (False, True):
        watchers, next_five = build(as_run)
        assert watchers.try_complete_watched() == 1
        results.append((len(watchers), [op.name for op in watchers if isinstance(op, Op)]))
    assert results[0] == results[1] == (2, ["done13", "done14"])
