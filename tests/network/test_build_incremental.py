"""``FetchSessionHandler.build_incremental`` gives what Kafka's ``FetchSessionHandler.Builder.build`` gives.

The reference is Kafka's way, kept here: the fetcher ``add``s every partition it wants, in its order, and
``build`` walks them against the session. Random histories (seeded) of partitions joining and leaving the
fetcher, data changing (fetch offset, log start, leader epoch, last fetched epoch, max bytes), partitions
leaving and rejoining the wanted set (a backoff), session answers (new session, next epoch, session closed
by the broker, session errors, request failures) drive two handlers side by side: one built by the walk,
one by ``build_incremental`` from the partitions that changed plus some that did not (in random order: a
fetcher's marks may over-approximate). Every request and the session after it must be identical.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from kafkasim.broker.fetch import PartitionData
from kafkasim.broker.fetch_session import INITIAL_METADATA, new_incremental
from kafkasim.broker.records import TopicPartition
from kafkasim.network.fetch_session_handler import FetchSessionHandler, FetchSessionRequestData


def shape(data: FetchSessionRequestData) -> tuple[object, ...]:
    """Everything a request carries, order included."""
    return (
        list(data.to_send.items()),
        list(data.to_forget),
        list(data.session_partitions.items()),
        data.metadata,
    )


def walk(handler: FetchSessionHandler, wanted: dict[TopicPartition, PartitionData]) -> FetchSessionRequestData:
    """Kafka's way: every wanted partition, in the fetcher's order, through the Builder."""
    builder = handler.new_builder(copy_session_partitions=False)
    for tp, data in wanted.items():
        builder.add(tp, PartitionData(data.fetch_offset, data.log_start_offset, data.max_bytes,
                                      data.current_leader_epoch, data.last_fetched_epoch))
    return builder.build()


class Fetcher:
    """A fetcher's partitions in its order, each with its data and whether it is wanted (not delayed)."""

    def __init__(self, rng: random.Random, universe: list[TopicPartition]) -> None:
        self.rng = rng
        self.universe = universe
        self.order: dict[TopicPartition, int] = {}  # tp -> rank; dict order = fetcher order
        self.data: dict[TopicPartition, PartitionData] = {}
        self.delayed: set[TopicPartition] = set()
        self.next_rank = 0
        self.changed: set[TopicPartition] = set()

    def add(self, tp: TopicPartition) -> None:
        if tp not in self.order:
            self.order[tp] = self.next_rank
            self.next_rank += 1
        self.data[tp] = self.random_data()
        self.delayed.discard(tp)
        self.changed.add(tp)

    def remove(self, tp: TopicPartition) -> None:
        if self.order.pop(tp, None) is not None:
            del self.data[tp]
            self.delayed.discard(tp)
            self.changed.add(tp)

    def random_data(self) -> PartitionData:
        r = self.rng
        return PartitionData(r.randrange(4), r.randrange(2), r.choice((100, 200)), r.randrange(2), r.randrange(-1, 1))

    def wanted(self) -> dict[TopicPartition, PartitionData]:
        return {tp: self.data[tp] for tp in self.order if tp not in self.delayed}

    def step(self) -> None:
        r = self.rng
        for _ in range(r.randrange(4)):
            op = r.random()
            tp = r.choice(self.universe)
            if op < 0.15:
                self.add(tp)
            elif op < 0.25:
                self.remove(tp)
            elif tp in self.order:
                if op < 0.7:
                    old = self.data[tp]
                    new = self.random_data()
                    self.data[tp] = new
                    if new != old:
                        self.changed.add(tp)
                elif op < 0.85:
                    self.delayed.add(tp)
                    self.changed.add(tp)
                elif tp in self.delayed:
                    self.delayed.discard(tp)
                    self.changed.add(tp)

    def changes(self, over: int) -> list[tuple[int, TopicPartition, PartitionData | None]]:
        """The changed partitions plus ``over`` unchanged ones, shuffled; a removed one may carry any rank."""
        r = self.rng
        marked = set(self.changed) | set(r.sample(self.universe, min(over, len(self.universe))))
        self.changed.clear()
        out: list[tuple[int, TopicPartition, PartitionData | None]] = []
        for tp in sorted(marked, key=str):
            if tp in self.order and tp not in self.delayed:
                d = self.data[tp]
                # A new object with the same value: the handler compares by value.
                out.append((self.order[tp], tp, PartitionData(d.fetch_offset, d.log_start_offset, d.max_bytes,
                                                              d.current_leader_epoch, d.last_fetched_epoch)))
            else:
                out.append((r.randrange(1000), tp, None))
        r.shuffle(out)
        return out


def session_answer(rng: random.Random) -> Callable[[FetchSessionHandler], None]:
    """One of the ways ``handle_response`` / ``handle_error`` move the metadata on."""
    op = rng.random()
    session_id = rng.randrange(1, 5)

    def apply(h: FetchSessionHandler) -> None:
        m = h.next_metadata
        if m.is_full:
            h.next_metadata = new_incremental(session_id) if op < 0.8 else INITIAL_METADATA
        elif op < 0.85:
            h.next_metadata = m.next_incremental()
        elif op < 0.9:
            h.next_metadata = INITIAL_METADATA  # closed by the broker / FETCH_SESSION_ID_NOT_FOUND
        else:
            h.next_metadata = m.next_close_existing_attempt_new()  # another error, a timeout

    return apply


def run_history(seed: int, steps: int, builder: Callable[[FetchSessionHandler, Fetcher], FetchSessionRequestData]) -> int:
    rng = random.Random(seed)
    universe = [TopicPartition(rng.choice("ab"), p) for p in range(rng.randrange(1, 12))]
    universe = list(dict.fromkeys(universe))
    fetcher = Fetcher(rng, universe)
    for tp in universe:
        if rng.random() < 0.7:
            fetcher.add(tp)
    reference = FetchSessionHandler(1)
    handler = FetchSessionHandler(1)
    incrementals = 0
    for step in range(steps):
        fetcher.step()
        expected = walk(reference, fetcher.wanted())
        if handler.next_metadata.is_full:
            fetcher.changed.clear()
            got = walk(handler, fetcher.wanted())
        else:
            got = builder(handler, fetcher)
            incrementals += 1
        assert shape(got) == shape(expected), f"seed {seed} step {step}"
        assert list(handler.session_partitions.items()) == list(reference.session_partitions.items())
        answer = session_answer(rng)
        answer(reference)
        answer(handler)
        assert handler.next_metadata == reference.next_metadata
    return incrementals


def build_from_changes(handler: FetchSessionHandler, fetcher: Fetcher) -> FetchSessionRequestData:
    return handler.build_incremental(fetcher.changes(fetcher.rng.randrange(3)))


@pytest.mark.parametrize("seed", range(300))
def test_build_incremental_gives_what_the_builder_walk_gives(seed: int) -> None:
    assert run_history(seed, 60, build_from_changes) > 0


def test_missing_a_changed_partition_is_caught() -> None:
    # The test can fail: a fetcher that forgets one changed partition now and then sends another request.
    def forgetful(handler: FetchSessionHandler, fetcher: Fetcher) -> FetchSessionRequestData:
        changes = fetcher.changes(0)
        if changes and fetcher.rng.random() < 0.3:
            changes.pop()
        return handler.build_incremental(changes)

    failures = 0
    for seed in range(50):
        try:
            run_history(seed, 60, forgetful)
        except AssertionError:
            failures += 1
    assert failures > 25


def test_build_incremental_refuses_a_full_request() -> None:
    with pytest.raises(RuntimeError, match="full"):
        FetchSessionHandler(1).build_incremental([])


def test_orders_added_by_fetcher_rank_and_altered_and_removed_by_session_order() -> None:
    # Builder.build's order: added ones first (fetcher order), then the altered ones (session order); the
    # removed in session order; the session keeps its order, the added appended.
    a, b, c, d, e = (TopicPartition("t", p) for p in range(5))
    handler = FetchSessionHandler(1)
    builder = handler.new_builder()
    for tp in (a, b, c, d):
        builder.add(tp, PartitionData(0, 0, 100))
    builder.build()
    handler.next_metadata = new_incremental(7)
    got = handler.build_incremental([
        (9, e, PartitionData(0, 0, 100)),
        (1, d, PartitionData(5, 0, 100)),   # altered
        (0, a, PartitionData(5, 0, 100)),   # altered
        (3, c, None),                        # removed
        (2, b, None),                        # removed
    ])
    assert list(got.to_send) == [e, a, d]
    assert got.to_forget == [b, c]
    assert list(got.session_partitions) == [a, d, e]
    assert got.metadata == new_incremental(7)
