"""How each broker applies the metadata the KRaft controller commits (Kafka's ``MetadataLoader`` thread calling
``BrokerMetadataPublisher.onMetadataUpdate``).

Each broker publishes the committed metadata on its own, one delta at a time in log order: the delta reaches it
after its own propagation latency (``QuorumController``), its ``MetadataCache`` takes the new image at once (what
it answers clients' Metadata requests with: ``metadataCache.setImage`` comes first), then
``ReplicaManager.applyDelta`` makes its leaders and followers and moves its fetchers -- which, for a delta that
moves a leadership this broker hosts, takes ``controller.metadata_apply`` (drawn per broker per such delta).
Only then does the broker report the delta's offset in its heartbeats (``MetadataLoader``'s
``lastAppliedOffset`` is updated after every publisher ran): what the controller's controlled-shutdown check
(``BrokerHeartbeatManager``'s lowest active offset) waits for. So brokers apply a leadership change at
different times: a follower may fetch from the new leader before it leads (UNKNOWN_LEADER_EPOCH, and its
fetcher backs that partition off ``replica.fetch.backoff.ms``: ``AbstractFetcherThread``).

The metadata the controller commits while a network partition cuts a broker off from it waits, in order, and is
applied when the cut ends (the broker's next fetch of the metadata log; Kafka's observer may need up to
``controller.quorum.request.timeout.ms``, 2 s, more to notice its fetch was lost). A crashed broker gets nothing;
on restart it loads the whole committed image (a catch-up subscription).

Simplification: one ``MetadataLoader`` serves every broker (Kafka runs one per broker), each with its own queue.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from kafkasim.broker.config import LogConfig
from kafkasim.broker.metadata import MetadataDelta
from kafkasim.broker.records import TopicPartition
from kafkasim.server.metadata_cache import KRaftMetadataCache
from kafkasim.sim.calls import Call

if TYPE_CHECKING:
    from kafkasim.server.node_to_controller_channel_manager import NodeToControllerChannelManager

ApplyCost = Callable[[], float]


class MetadataLoader:
    """Every broker's ``MetadataLoader``: the deltas it has applied, its metadata cache, its leaderships."""

    def __init__(self, channel: NodeToControllerChannelManager, apply_costs: dict[int, ApplyCost]) -> None:
        """``apply_costs``: per broker, the time ``ReplicaManager.applyDelta`` takes for a delta that moves a
        leadership the broker hosts."""
        self.channel = channel
        self.apply_costs = apply_costs
        # Per broker (filled by subscribe): the metadata offset it has applied.
        self.applied_offset: dict[int, int] = {}
        self._log_config_for: dict[int, Callable[[TopicPartition], LogConfig]] = {}
        # Per broker: the partitions of the metadata it has applied, what it answers a client's Metadata
        # request with.
        self.metadata_cache: dict[int, KRaftMetadataCache] = {}
        # When each broker applied a delta naming it a partition's leader (Partition.makeLeader ran): the
        # failovers' applied_ms, per (partition, broker), in time order.
        self.leaderships_applied: dict[tuple[TopicPartition, int], list[float]] = {}
        self._held: dict[int, list[MetadataDelta]] = {}  # deltas waiting for the end of a cut, per broker

    def subscribe(self, broker_id: int, log_config_for: Callable[[TopicPartition], LogConfig], catch_up: bool) -> None:
        channel = self.channel
        env = channel.env
        controller = channel.controller
        broker = channel.brokers[broker_id]
        channel.incarnations.setdefault(broker_id, 0)
        self._log_config_for[broker_id] = log_config_for
        if not catch_up:
            self.applied_offset[broker_id] = controller.image.offset  # it starts with the bootstrap image
            self.metadata_cache[broker_id] = KRaftMetadataCache(controller.image.partitions)
        cache = self.metadata_cache[broker_id]
        incarnation = channel.incarnations[broker_id]
        waiting: deque[MetadataDelta] = deque()  # committed, reached the broker, not published yet
        publishing = [False]

        def publish_next() -> None:
            """``MetadataLoader.maybePublishMetadata``: one delta at a time, in log order."""
            while waiting and not publishing[0]:
                if broker.crashed or channel.incarnations[broker_id] != incarnation:
                    waiting.clear()
                    return
                delta = waiting.popleft()
                apply_cost = self.apply_costs.get(broker_id)
                # BrokerMetadataPublisher.onMetadataUpdate: metadataCache.setImage first ...
                moves = apply_cost is not None and _moves_leadership(broker_id, cache, delta)
                cache.set_image(delta)
                cost = apply_cost() if moves and apply_cost is not None else 0.0
                if cost <= 0.0:
                    applied(delta)
                else:
                    # ... then ReplicaManager.applyDelta (makeLeader / makeFollower, the fetchers), which takes
                    # time: meanwhile the broker's partitions are as they were.
                    publishing[0] = True
                    Call(env, cost, partial(applied_later, delta))

        def applied(delta: MetadataDelta) -> None:
            broker.apply_delta(delta, log_config_for=log_config_for)
            for tp, registration in delta.partitions.items():
                if registration.leader == broker_id:
                    self.leaderships_applied.setdefault((tp, broker_id), []).append(env.now)
            # MetadataLoader: lastAppliedOffset (what the heartbeats report) moves once every publisher ran.
            self.applied_offset[broker_id] = max(self.applied_offset[broker_id], delta.offset)

        def applied_later(delta: MetadataDelta, _event: object) -> None:
            publishing[0] = False
            if broker.crashed or channel.incarnations[broker_id] != incarnation:
                waiting.clear()
                return
            applied(delta)
            publish_next()

        def apply_now(delta: MetadataDelta) -> None:
            if broker.crashed:
                return
            waiting.append(delta)
            publish_next()

        cut = channel.cut(broker_id)
        if cut is None:
            controller.subscribe(broker_id, apply_now, catch_up=catch_up)
            return

        def apply(delta: MetadataDelta) -> None:
            # Cut off from the controller: the delta waits for the end of the cut, behind any already waiting.
            held = self._held.get(broker_id)
            if held is None:
                end = cut.until(env.now)
                if end is None:
                    apply_now(delta)
                    return
                held = self._held[broker_id] = []
                if end != math.inf:
                    Call(env, end - env.now, lambda _e: self._release(broker_id, held, apply_now))
            held.append(delta)

        controller.subscribe(broker_id, apply, catch_up=catch_up)

    def resubscribe(self, broker_id: int) -> None:
        """A restarted broker loads the whole committed image first (a catch-up subscription)."""
        self.subscribe(broker_id, self._log_config_for[broker_id], catch_up=True)

    def drop_held(self, broker_id: int) -> None:
        """The broker crashed: what it was waiting for goes with it."""
        self._held.pop(broker_id, None)

    def _release(self, broker_id: int, held: list[MetadataDelta], apply: Callable[[MetadataDelta], None]) -> None:
        if self._held.get(broker_id) is not held:
            return  # the broker crashed meanwhile: what it was waiting for went with it
        del self._held[broker_id]
        for delta in held:
            apply(delta)


def _moves_leadership(broker_id: int, cache: KRaftMetadataCache, delta: MetadataDelta) -> bool:
    """Whether ``delta`` gives a partition that ``broker_id`` hosts a new leader or leader epoch (Kafka's
    ``TopicsDelta.localChanges`` leading to a state change in ``Partition.makeLeader`` / ``makeFollower``);
    an ISR-only change ("Skipped the become-leader state change") costs nothing here."""
    for tp, registration in delta.partitions.items():
        if broker_id not in registration.replicas:
            continue
        before = cache.get(tp)
        if before is None or before.leader != registration.leader or before.leader_epoch != registration.leader_epoch:
            return True
    return False
