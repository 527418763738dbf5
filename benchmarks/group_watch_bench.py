"""What one park + complete cycle costs when a delayed operation watches a KeyGroup instead of list(group).

The cycle is a fetch session's: an operation parks on the session's N keys
(`try_complete_else_watch`), a change on one of those keys completes it (`check_and_complete(key)`, the
key moving through the group with a stride so that every key is checked in turn), and the expiration
reaper's pass runs (`advance_clock`, which purges the watch lists by Kafka's rule once 1,000 completed
operations may linger). Plain watching appends the operation to N watch lists and its purge walks them:
O(N) per cycle. A group watch appends it once; a key receives it when that key is checked: O(1).

Both ways run in the same process, alternating, on a fresh purgatory per pass; the figure is the best of
`--repeat` passes of CPU time (time.process_time) per cycle. Each pass also checks that both ways
completed every operation and end with the same PurgatorySize (`watched`).

    uv run python benchmarks/group_watch_bench.py                     # group sizes 1, 10, 100, 1000
    uv run python benchmarks/group_watch_bench.py --sizes 1,1000 --cycles 2000 --repeat 3
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Hashable, Sequence

from kafkasim.purgatory import DelayedOperation, DelayedOperationPurgatory, GroupWatchStrategy, KeyGroup
from kafkasim.timer import ManualTime

DEFAULT_SIZES = (1, 10, 100, 1000)
STRIDE = 7919  # a prime: key i*STRIDE mod N visits every key of the group


class Fetch(DelayedOperation):
    """Completes on the first check after `completable` is set, like a fetch whose partition got data."""

    __slots__ = ("completable",)

    def __init__(self) -> None:
        super().__init__(30_000)
        self.completable = False

    def try_complete(self) -> bool:
        return self.force_complete() if self.completable else False

    def on_complete(self) -> None:
        pass

    def on_expiration(self) -> None:
        pass


def run_cycles(keys: Sequence[Hashable] | KeyGroup, key_list: list[Hashable], cycles: int) -> tuple[float, int, int]:
    """`cycles` park + complete + reaper cycles on a fresh purgatory: (CPU seconds, completed, watched)."""
    purgatory = DelayedOperationPurgatory("Fetch", time=ManualTime(0), group_watch_strategy=GroupWatchStrategy())
    size = len(key_list)
    completed = 0
    gc.collect()
    start = time.process_time()
    for i in range(cycles):
        op = Fetch()
        purgatory.try_complete_else_watch(op, keys)
        op.completable = True
        completed += purgatory.check_and_complete(key_list[(i * STRIDE) % size])
        purgatory.advance_clock()
    elapsed = time.process_time() - start
    return elapsed, completed, purgatory.watched


def measure(size: int, cycles: int, repeat: int) -> tuple[float, float]:
    """Best CPU µs per cycle of plain and group watching of the same `size` keys."""
    key_list: list[Hashable] = [("topic", p) for p in range(size)]
    group = KeyGroup(key_list)
    best_plain = best_group = float("inf")
    for _ in range(repeat):
        plain_s, plain_done, plain_watched = run_cycles(key_list, key_list, cycles)
        group_s, group_done, group_watched = run_cycles(group, key_list, cycles)
        if not plain_done == group_done == cycles or plain_watched != group_watched:
            raise AssertionError(
                f"size {size}: plain completed {plain_done} (watched {plain_watched}), "
                f"group completed {group_done} (watched {group_watched}) of {cycles}"
            )
        best_plain = min(best_plain, plain_s)
        best_group = min(best_group, group_s)
    return best_plain / cycles * 1e6, best_group / cycles * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)), help="group sizes, comma separated")
    parser.add_argument("--cycles", type=int, default=5000, help="park + complete cycles per pass")
    parser.add_argument("--repeat", type=int, default=5, help="passes per way; the best is reported")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = [(size, *measure(size, args.cycles, args.repeat)) for size in sizes]
    plain_1, group_1 = rows[0][1], rows[0][2]
    print(f"{args.cycles} cycles per pass, best of {args.repeat}; CPU µs per park + complete cycle\n")
    print(f"| group size | plain µs | group µs | group vs plain | plain vs size {sizes[0]} | group vs size {sizes[0]} |")
    print("|---:|---:|---:|---:|---:|---:|")
    for size, plain, grouped in rows:
        print(
            f"| {size:,} | {plain:.2f} | {grouped:.2f} | {grouped / plain:.3f}x | "
            f"{plain / plain_1:.2f}x | {grouped / group_1:.2f}x |"
        )


if __name__ == "__main__":
    main()
