"""The cost of building an incremental fetch request: the partitions that changed, not every partition.

A replica fetcher thread and a consumer with 1,000 partitions, answered by a scripted leader: after the
full request, a response with records for one partition. Kafka's walk (what the fetchers did before)
makes a ``PartitionData`` for each of the 1,000 partitions on every request; now only for the partitions
that changed or were named in the response before it. That the requests stay Kafka's is tests/server/test_fetch_build_equivalence.py's job.
"""

from __future__ import annotations

from typing import Any

import pytest
import simpy

import kafkasim.clients.consumer as consumer_module
import kafkasim.server.replica_fetcher_thread as fetcher_module
from kafkasim.broker.alter_partition import ControllerAlterPartitionManager
from kafkasim.broker.config import KafkaConfig, LogConfig
from kafkasim.broker.errors import Errors
from kafkasim.broker.fetch import LogReadResult, PartitionData
from kafkasim.broker.fetch_session import FetchResponse
from kafkasim.broker.log_offset_metadata import LogOffsetMetadata
from kafkasim.broker.log_segment import FetchDataInfo
from kafkasim.broker.records import RecordBatch, TopicPartition
from kafkasim.broker.replica_manager import ReplicaManager
from kafkasim.clients.config import ConsumerClientConfig
from kafkasim.clients.consumer import Consumer
from kafkasim.network.ids import IdSource
from kafkasim.network.messages import RequestEnvelope, Response, fetch_response_data_bytes
from kafkasim.server.replica_fetcher_manager import InitialFetchState
from kafkasim.server.replica_fetcher_thread import ReplicaFetcherConfig, ReplicaFetcherThread
from tests.clients.support import ScriptedConnection
from tests.server.test_fetch_build_equivalence import SimTime, Sink

TPS = [TopicPartition("t", p) for p in range(1000)]


def _nothing() -> LogReadResult:
    return LogReadResult(FetchDataInfo(LogOffsetMetadata(0), [], 0), Errors.NONE, None, 0, 0, 0)


def _records(base_offset: int) -> LogReadResult:
    batch = RecordBatch(1, 100, 0, 0, "p", base_offset, 0)
    info = FetchDataInfo(LogOffsetMetadata(base_offset), [batch], 100)
    return LogReadResult(info, Errors.NONE, None, 0, 0, batch.next_offset)


def _answer(env: simpy.Environment, envelope: RequestEnvelope, response: FetchResponse) -> None:
    envelope.set_response(Response(response, fetch_response_data_bytes(response), len(response.responses)))
    envelope.client_receive_ms = envelope.end_ms = env.now
    envelope.response_received = envelope.response_sent = True
    assert envelope.on_response is not None
    envelope.on_response(envelope)


def _counting(monkeypatch: pytest.MonkeyPatch, module: Any) -> list[PartitionData]:
    made: list[PartitionData] = []

    def counted(*args: Any) -> PartitionData:
        made.append(PartitionData(*args))
        return made[-1]

    monkeypatch.setattr(module, "PartitionData", counted)
    return made


@pytest.mark.pure_only
def test_a_follower_builds_data_for_the_changed_partition_only(monkeypatch: pytest.MonkeyPatch) -> None:
    made = _counting(monkeypatch, fetcher_module)
    env = simpy.Environment()
    rm = ReplicaManager(1, KafkaConfig(), SimTime(env), alter_partition_manager=ControllerAlterPartitionManager())
    for tp in TPS:
        rm.create_partition(tp, log_config=LogConfig())
        rm.make_follower(tp, leader=0, replicas=[0, 1], leader_epoch=0, partition_epoch=0)
    sent: list[RequestEnvelope] = []
    thread = ReplicaFetcherThread(
        env, "follower", 1, 0, ReplicaFetcherConfig(), rm, lambda _broker: ScriptedConnection(sent),
        lambda: 0.0, lambda: 0.0, IdSource(), Sink(),
    )
    thread.add_partitions({tp: InitialFetchState(0, 0) for tp in TPS})
    thread.start()
    env.run(until=1.0)
    assert len(sent) == 1 and len(made) == 1000  # the full request lists every partition
    # The full response names every partition: each is looked at again once (the cost of the response).
    _answer(env, sent[0], FetchResponse(Errors.NONE, 5, [(tp, _nothing()) for tp in TPS]))
    assert len(sent) == 2 and len(sent[1].body.fetch_infos) == 0  # nothing changed: an empty incremental
    assert len(made) == 2000
    _answer(env, sent[1], FetchResponse(Errors.NONE, 5, []))
    assert len(sent) == 3 and len(sent[2].body.fetch_infos) == 0
    assert len(made) == 2000  # Kafka's walk: 3,000
    _answer(env, sent[2], FetchResponse(Errors.NONE, 5, [(TPS[7], _records(0))]))
    assert [tp for tp, _ in sent[3].body.fetch_infos] == [TPS[7]]
    assert len(made) == 2001  # Kafka's walk: 4,000


@pytest.mark.pure_only
def test_a_consumer_builds_data_for_the_moved_partition_only(monkeypatch: pytest.MonkeyPatch) -> None:
    made = _counting(monkeypatch, consumer_module)
    env = simpy.Environment()
    sent: list[RequestEnvelope] = []
    config = ConsumerClientConfig("c1", 1, 500, 1024 * 1024, 50 * 1024 * 1024, request_timeout_ms=30_000)
    consumer = Consumer(env, config, TPS, lambda _broker: ScriptedConnection(sent), IdSource(), Sink())
    consumer.start()
    env.run(until=1.0)
    assert len(sent) == 1 and len(made) == 1000
    _answer(env, sent[0], FetchResponse(Errors.NONE, 5, [(tp, _nothing()) for tp in TPS]))
    assert len(sent) == 2 and len(sent[1].body.fetch_infos) == 0
    assert len(made) == 1000
    _answer(env, sent[1], FetchResponse(Errors.NONE, 5, [(TPS[7], _records(0))]))
    assert [tp for tp, _ in sent[2].body.fetch_infos] == [TPS[7]]
    assert len(made) == 1001  # Kafka's walk: 3,000
