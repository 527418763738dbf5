"""A Kafka consumer's fetch loop: long-poll the leader for every partition of a topic, up to the HW.

One fetch in flight at a time (Kafka's Fetcher sends one fetch per broker and pipelines the next as soon
as the previous response arrived). Each fetch asks for every assigned partition at its position with
``fetch.min.bytes``, ``fetch.max.wait.ms`` (the DelayedFetch delay, ``ReplicaManager.fetchMessages``),
``fetch.max.bytes`` and ``max.partition.fetch.bytes``. The broker reads up to the HW (isolation
HIGH_WATERMARK). On a response the complete batches are consumed -- the first time a consumer sees a batch is
recorded -- a trailing partial batch is discarded, and the position moves to the end of the last complete
batch.

Errors: OFFSET_OUT_OF_RANGE resets the partition to the log start (``auto.offset.reset=earliest``, which
is where the consumer starts too); other errors retry after ``retry.backoff.ms`` (100). A fetch without a
response after ``request.timeout.ms`` disconnects and fetches again after the backoff.
Not modelled: group membership and rebalances (a consumer owns all partitions of its topic), commits,
the application's poll loop and processing time.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from kafkasim.broker.errors import Errors
from kafkasim.broker.fetch import CONSUMER_REPLICA_ID, PartitionData
from kafkasim.broker.records import TopicPartition
from kafkasim.clients.config import ConsumerClientConfig
from kafkasim.network.messages import API_FETCH_CONSUMER, RequestEnvelope
from kafkasim.network.network_client import FetchClient
from kafkasim.network.observer import Observer
from kafkasim.sim.calls import Call

if TYPE_CHECKING:
    from simpy import Environment

    from kafkasim.network.ids import IdSource

RETRY_BACKOFF_MS = 100.0  # consumer retry.backoff.ms default


class Consumer(FetchClient):
    """One consumer client fetching all partitions of its topic from offset 0."""

    def __init__(
        self,
        env: Environment,
        config: ConsumerClientConfig,
        partitions: Sequence[TopicPartition],
        connect: Callable[[], Any],
        ids: IdSource,
        observer: Observer,
        *,
        stop_ms: float = math.inf,
    ) -> None:
        super().__init__(
            env, config.name, connect, ids, observer, float(config.request_timeout_ms), stop_ms=stop_ms
        )
        self.config = config
        self.partitions = list(partitions)
        self.positions: dict[TopicPartition, int] = {tp: 0 for tp in self.partitions}
        self.batches_consumed = 0

    def start(self) -> None:
        Call(self.env, 0.0, lambda _e: self._fetch())

    def _fetch(self) -> None:
        if self.paused:
            self._deferred.append(self._fetch)
            return
        now = self.env.now
        if now >= self._stop_ms or self._in_flight is not None:
            return
        cfg = self.config
        positions = self.positions
        infos = [(tp, PartitionData(positions[tp], -1, cfg.max_partition_fetch_bytes)) for tp in self.partitions]
        self._send_fetch(
            API_FETCH_CONSUMER, CONSUMER_REPLICA_ID, cfg.fetch_max_wait_ms, cfg.fetch_min_bytes, cfg.fetch_max_bytes,
            infos, now,
        )

    def _on_response(self, envelope: RequestEnvelope) -> None:
        if self.paused:
            self._deferred.append(lambda: self._on_response(envelope))
            return
        if envelope is not self._in_flight:
            return  # timed out earlier; ignored
        self._in_flight = None
        now = self.env.now
        positions = self.positions
        retry = False
        for tp, result in envelope.response:
            error = result.error
            if error == Errors.NONE:
                records = result.info.records
                if records:
                    # Only batches at or after the position are new (a read starts at the batch holding it).
                    position = positions[tp]
                    for batch in records:
                        if batch.last_offset >= position:
                            self._observer.batch_consumed(self.name, batch, now)
                            self.batches_consumed += 1
                    positions[tp] = records[-1].next_offset
            elif error == Errors.OFFSET_OUT_OF_RANGE:
                positions[tp] = max(0, result.log_start_offset)
            else:
                retry = True
        self._observer.request_finished(envelope)
        if retry:
            Call(self.env, RETRY_BACKOFF_MS, lambda _e: self._fetch())
        else:
            self._fetch()

    def _on_request_timeout(self, envelope: RequestEnvelope) -> None:
        self._fail_timed_out(envelope)
        Call(self.env, RETRY_BACKOFF_MS, lambda _e: self._fetch())

    def on_resume(self) -> None:
        # After the responses that arrived during the pause (NetworkClient.poll's order).
        self._request_timer.check()
