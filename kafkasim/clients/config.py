"""The clients' configurations: frozen, flat, in canonical units, built by ``run/build.py`` from a scenario.

Field names are Kafka's client config names with dots turned into underscores (the Kafka name is in the
comment where it differs); only what the client reads is here. The workload fields (``rate_per_s``,
``arrival``) are the simulator's own. The connection configs every client shares (``reconnect.backoff.*``,
``socket.connection.setup.timeout.*``) are one ``ConnectionConfig``, read by its ``NetworkClient``.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafkasim.network.cluster_connection_states import ConnectionConfig


@dataclass(frozen=True, slots=True)
class ArrivalConfig:
    """When a producer's records are meant to be sent (open loop): ``poisson``, ``constant`` or ``on_off``."""

    kind: str  # poisson | constant | on_off
    on_ms: float = 0.0  # on_off: sending time of each period
    off_ms: float = 0.0  # on_off: silent time of each period
    pattern: str = ""  # on_off: gaps inside an on period (poisson | constant); others: the kind itself

    def __post_init__(self) -> None:
        if not self.pattern:
            object.__setattr__(self, "pattern", self.kind)


@dataclass(frozen=True, slots=True)
class ProducerClientConfig:
    """What a ``Producer`` reads (Kafka's ``ProducerConfig`` names)."""

    name: str  # client.id
    acks: int  # acks: -1 (all), 0 or 1
    linger_ms: float  # linger.ms
    batch_size: int  # batch.size
    max_in_flight_requests_per_connection: int  # max.in.flight.requests.per.connection
    request_timeout_ms: int  # request.timeout.ms (also the produce request's timeout)
    partitioner: str  # sticky | round_robin | random (Kafka: partitioner.class / BuiltInPartitioner)
    rate_per_s: float  # records per second (simulator workload)
    arrival: ArrivalConfig  # simulator workload
    retries: int = 2_147_483_647  # retries
    retry_backoff_ms: float = 100.0  # retry.backoff.ms
    retry_backoff_max_ms: float = 1000.0  # retry.backoff.max.ms
    delivery_timeout_ms: float = 120_000.0  # delivery.timeout.ms (already >= linger.ms + request.timeout.ms)
    enable_idempotence: bool = True  # enable.idempotence, after ProducerConfig.postProcessAndValidateIdempotenceConfigs
    producer_id: int = 0  # the idempotent producer's id (InitProducerId is not simulated: the builder assigns it)
    buffer_memory: int = 33_554_432  # buffer.memory
    max_block_ms: float = 60_000.0  # max.block.ms (how long send() waits for buffer memory)
    # reconnect.backoff.ms, reconnect.backoff.max.ms, socket.connection.setup.timeout.ms and .max.ms
    connection: ConnectionConfig = ConnectionConfig()


@dataclass(frozen=True, slots=True)
class ConsumerClientConfig:
    """What a ``Consumer`` reads (Kafka's ``ConsumerConfig`` names)."""

    name: str  # client.id
    fetch_min_bytes: int  # fetch.min.bytes
    fetch_max_wait_ms: int  # fetch.max.wait.ms (the DelayedFetch delay)
    max_partition_fetch_bytes: int  # max.partition.fetch.bytes
    fetch_max_bytes: int  # fetch.max.bytes
    request_timeout_ms: int  # request.timeout.ms
    retry_backoff_ms: int = 100  # retry.backoff.ms (Kafka's default; not a scenario key)
    retry_backoff_max_ms: int = 1000  # retry.backoff.max.ms (Kafka's default; not a scenario key)
    # reconnect.backoff.ms, reconnect.backoff.max.ms, socket.connection.setup.timeout.ms and .max.ms
    connection: ConnectionConfig = ConnectionConfig()
