"""The client's view of the cluster: Kafka's ``Metadata`` (leader and leader epoch per partition), its
refreshes paced by the same ``ExponentialBackoff`` (KIP-580, ``kafkasim.sim.backoff``) as producer retries.

Plain synchronous logic; the producer decides when to ask (``Metadata.time_to_next_update``) and the
refresh itself is a callable the builder passes in (``fetch_metadata() -> {tp: (leader, leader_epoch)}``),
answered one round trip later.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Final

from kafkasim.broker.errors import Errors
from kafkasim.broker.records import TopicPartition
from kafkasim.sim.backoff import ExponentialBackoff

NO_LEADER: Final = -1  # MetadataResponse's leader id when the partition has none

# Kafka's InvalidMetadataException subclasses a produce response can carry: they make the Sender request
# a metadata update (Sender.completeBatch -> metadata.requestUpdate).
INVALID_METADATA_ERRORS: Final = frozenset({
    Errors.NOT_LEADER_OR_FOLLOWER,
    Errors.FENCED_LEADER_EPOCH,
    Errors.UNKNOWN_TOPIC_OR_PARTITION,
    Errors.LEADER_NOT_AVAILABLE,
    Errors.KAFKA_STORAGE_ERROR,
    Errors.REPLICA_NOT_AVAILABLE,
    Errors.UNKNOWN_TOPIC_ID,
    Errors.INCONSISTENT_TOPIC_ID,
})


class Metadata:
    """Kafka's client ``Metadata``: the leader and leader epoch of every partition the client uses.

    * ``request_update()`` (``Metadata.requestUpdate``) marks the view stale; the client then refreshes
      as soon as ``time_to_next_update`` allows.
    * Refreshes are rate-limited by the exponential backoff (``Metadata.timeToAllowUpdate``): after a
      response that brought nothing newer (``equivalentResponseCount``) the next one waits
      ``backoff(count - 1)``, so repeated refreshes during an outage settle at ~``retry.backoff.max.ms``.
    * ``update`` ignores a partition whose leader epoch is older than the last one seen
      (``Metadata.updateLastSeenEpochIfNewer``): a lagging broker cannot roll the view back.
    * ``metadata.max.age.ms`` refreshes are not modelled (the layout only changes through the triggers).
    """

    __slots__ = ("_leaders", "_epochs", "need_update", "_allowed_at_ms", "_equivalent_responses", "_backoff",
                 "updates", "leaders_learned")

    def __init__(self, leaders: Mapping[TopicPartition, tuple[int, int]], backoff: ExponentialBackoff) -> None:
        self._leaders: dict[TopicPartition, int] = {tp: leader for tp, (leader, _) in leaders.items()}
        self._epochs: dict[TopicPartition, int] = {tp: epoch for tp, (_, epoch) in leaders.items()}
        self.need_update = False
        self._allowed_at_ms = -math.inf
        self._equivalent_responses = 0
        self._backoff = backoff
        self.updates = 0  # responses applied that changed something
        # (when, partition, new leader) each time a response named another leader than the one known: when
        # this client learned of a failover (summary failovers' learned_ms).
        self.leaders_learned: list[tuple[float, TopicPartition, int]] = []

    def leader(self, tp: TopicPartition) -> int:
        return self._leaders.get(tp, NO_LEADER)

    def leader_epoch(self, tp: TopicPartition) -> int:
        return self._epochs.get(tp, -1)

    def leaders(self) -> dict[TopicPartition, int]:
        return dict(self._leaders)

    def request_update(self) -> None:
        """``Metadata.requestUpdate``."""
        self.need_update = True

    def time_to_next_update(self, now_ms: float) -> float:
        """0 if a refresh may start now, else how long until it may; inf when no update is wanted."""
        if not self.need_update:
            return math.inf
        return max(0.0, self._allowed_at_ms - now_ms)

    def refresh_started(self) -> None:
        self.need_update = False

    def update(self, response: Mapping[TopicPartition, tuple[int, int]], now_ms: float) -> set[TopicPartition]:
        """Apply a metadata response; returns the partitions whose leader or epoch changed."""
        changed: set[TopicPartition] = set()
        for tp, (leader, epoch) in response.items():
            known = self._epochs.get(tp)
            if known is not None and epoch < known:
                continue  # updateLastSeenEpochIfNewer: an older epoch never replaces a newer one
            if known != epoch or self._leaders.get(tp) != leader:
                changed.add(tp)
                if leader != NO_LEADER and self._leaders.get(tp, leader) != leader:
                    self.leaders_learned.append((now_ms, tp, leader))
            self._leaders[tp] = leader
            self._epochs[tp] = epoch
        if changed:
            self._equivalent_responses = 0
            self.updates += 1
        else:
            self._equivalent_responses += 1
        if any(leader == NO_LEADER for leader in self._leaders.values()):
            self.need_update = True  # batches wait for a leader: keep asking (Sender: unknownLeaderTopics)
        # Metadata.timeToAllowUpdate: backoff(attempts - 1) after the last refresh (attempts = 0 after a
        # successful one, so at least ~retry.backoff.ms apart), and backoff(equivalentResponseCount - 1)
        # while responses bring nothing new. Drawn once per response (Kafka draws on every call).
        wait = self._backoff.backoff(0)
        if self._equivalent_responses > 0:
            wait = max(wait, self._backoff.backoff(self._equivalent_responses - 1))
        self._allowed_at_ms = now_ms + wait
        return changed
