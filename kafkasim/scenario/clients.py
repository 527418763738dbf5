"""Producers, consumers and followers: Kafka client configs verbatim plus the simulated workload."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BeforeValidator, Field, PlainSerializer, WithJsonSchema, model_validator

from kafkasim.scenario.base import OrShorthand, ScenarioModel
from kafkasim.scenario.broker import INT32_MAX
from kafkasim.scenario.distributions import DurationDistribution, SizeConstant, SizeDistribution, constant_ms
from kafkasim.scenario.errors import fail, fail_at
from kafkasim.scenario.network import Link
from kafkasim.scenario.stalls import Stalls
from kafkasim.scenario.units import Duration, KafkaBytes, KafkaMs, Rate

# Clients are referred to by name in faults; follower-<id> names the followers.
CLIENT_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"

# CommonClientConfigs' connection configs, the same keys (and Kafka defaults) for producers and consumers: their
# NetworkClient's ClusterConnectionStates.
ReconnectBackoffMs = Annotated[KafkaMs, Field(
    alias="reconnect.backoff.ms", ge=0,
    description="How long a client waits after a disconnect before it connects to that broker again "
    "(ClusterConnectionStates); doubled after each failed attempt up to reconnect.backoff.max.ms, with "
    "+/-20% jitter, and back to this value once a connection is made. Set without reconnect.backoff.max.ms, it "
    "disables the growth, as in Kafka (CommonClientConfigs.postProcessReconnectBackoffConfigs): the resolved "
    "scenario shows reconnect.backoff.max.ms equal to it.")]
ReconnectBackoffMaxMs = Annotated[KafkaMs, Field(
    alias="reconnect.backoff.max.ms", ge=0,
    description="The cap of the reconnect backoff (before the jitter); below reconnect.backoff.ms it is the "
    "backoff, constant (Kafka's ExponentialBackoff).")]
SocketConnectionSetupTimeoutMs = Annotated[KafkaMs, Field(
    alias="socket.connection.setup.timeout.ms", ge=0,
    description="How long a connection may take to be set up (its TCP handshake: no SYN-ACK comes through a "
    "cut link) before the client closes it and backs the broker off (NetworkClient.handleTimedOutConnections); "
    "doubled after each failed attempt up to socket.connection.setup.timeout.max.ms, with +/-20% jitter.")]
SocketConnectionSetupTimeoutMaxMs = Annotated[KafkaMs, Field(
    alias="socket.connection.setup.timeout.max.ms", ge=0,
    description="The cap of the connection setup timeout; below socket.connection.setup.timeout.ms it is the "
    "timeout, constant.")]


def reconnect_backoff_max(model: ProducerConfig | ConsumerConfig) -> None:
    """CommonClientConfigs.postProcessReconnectBackoffConfigs: ``reconnect.backoff.ms`` given without
    ``reconnect.backoff.max.ms`` disables the exponential growth (the max becomes the base)."""
    given = model.model_fields_set
    if "reconnect_backoff_ms" in given and "reconnect_backoff_max_ms" not in given:
        object.__setattr__(model, "reconnect_backoff_max_ms", model.reconnect_backoff_ms)


def _acks(value: Any) -> Any:
    # Kafka's producer accepts "all", "-1", "0", "1" (ProducerConfig ACKS_CONFIG); "all" is -1.
    if isinstance(value, bool):
        fail(f"got {value!r} (allowed: all, -1, 0, 1)")
    text = str(value).strip().lower() if isinstance(value, int | str) else None
    normalized = {"all": -1, "-1": -1, "0": 0, "1": 1}.get(text) if text is not None else None
    if normalized is None:
        shown = repr(value) if isinstance(value, str | int | float) else type(value).__name__
        fail(f"got {shown[:30]} (allowed: all, -1, 0, 1)")
    return normalized


Acks = Annotated[
    Literal[-1, 0, 1],
    BeforeValidator(_acks),
    PlainSerializer(lambda v: "all" if v == -1 else v, when_used="json"),
    WithJsonSchema({"enum": ["all", -1, 0, 1, "-1", "0", "1"]}),
]
"""Producer acks, normalized to -1 (= "all"), 0 or 1."""


class PoissonArrival(ScenarioModel):
    """Open-loop arrivals with exponential gaps at `rate` (the usual model of many independent senders)."""

    type: Literal["poisson"] = "poisson"


class ConstantArrival(ScenarioModel):
    """Open-loop arrivals exactly 1/rate apart."""

    type: Literal["constant"] = "constant"


class OnOffArrival(ScenarioModel):
    """Bursts: `on` time sending at `rate` (with `pattern` gaps), then `off` time silent, repeated."""

    type: Literal["on_off"] = "on_off"
    on: Duration = Field(gt=0)
    off: Duration
    pattern: Literal["poisson", "constant"] = "poisson"
    """Gaps between records during an on period."""


def _arrival_shorthand(value: Any) -> Any:
    return {"type": value} if isinstance(value, str) else value


Arrival = Annotated[
    PoissonArrival | ConstantArrival | OnOffArrival,
    Field(discriminator="type"),
    BeforeValidator(_arrival_shorthand),
    OrShorthand({"enum": ["poisson", "constant"]}),
]


class ProducerCosts(ScenarioModel):
    """Simulator-only: the producer's Sender thread's time to wake and to build each ProduceRequest from the
    batches it drained (Sender.sendProduceRequest). One thread: requests built back to back queue, and each
    goes to the network when it is built (its client_send_ms). Kafka has no metric for this time alone: it
    falls between record-queue-time-avg (ending at the drain) and request-latency-avg (starting at the send)."""

    per_request: DurationDistribution = Field(default_factory=lambda: constant_ms(0.0))
    """Once per ProduceRequest."""
    per_batch: DurationDistribution = Field(default_factory=lambda: constant_ms(0.0))
    """Per batch in the request (drawn once per request, times its batch count)."""
    wakeup: DurationDistribution = Field(default_factory=lambda: constant_ms(0.0))
    """How long the Sender thread, waiting in Selector.poll, takes to run once the application's send() wakes
    it (KafkaProducer.doSend calls sender.wakeup() when a record starts a new batch): the host's scheduling
    latency. Records sent meanwhile join the batch, as on a real producer whose cores are shared. 0 by default
    (at once); a response is handled at once either way. A negative draw is 0."""


class ProducerConfig(ScenarioModel):
    """One producer sending `rate` records per second to `topic`, open loop.

    Open loop: a record's intended send time comes from the arrival process, never from when the previous
    one was acknowledged, so latency is measured without coordinated omission.
    """

    name: str = Field(pattern=CLIENT_NAME_PATTERN)
    topic: str
    acks: Acks = -1
    """all (= -1, Kafka's default since 3.0), 0 or 1."""
    linger_ms: KafkaMs = Field(default=5, alias="linger.ms", ge=0)
    """Kafka 4.0's default (KIP-1030)."""
    batch_size: KafkaBytes = Field(default=16_384, alias="batch.size", ge=0, le=INT32_MAX)
    max_in_flight_requests_per_connection: int = Field(
        default=5, alias="max.in.flight.requests.per.connection", ge=1, le=INT32_MAX
    )
    request_timeout_ms: KafkaMs = Field(default=30_000, alias="request.timeout.ms", ge=0, le=INT32_MAX)
    """Sent as the produce request's timeout: the DelayedProduce delay (ReplicaManager.appendRecords)."""
    delivery_timeout_ms: KafkaMs = Field(default=120_000, alias="delivery.timeout.ms", ge=0, le=INT32_MAX)
    """How long a record may take from send() to its acknowledgement, retries included; then it fails
    (TimeoutException, recorded as REQUEST_TIMED_OUT), whether queued or in flight. Must be >= linger.ms +
    request.timeout.ms; when left out Kafka raises it to that sum (KafkaProducer.configureDeliveryTimeout),
    and so do we (the resolved scenario shows the raised value)."""
    retries: int = Field(default=INT32_MAX, ge=0, le=INT32_MAX)
    """How many times a failed batch is re-sent after a retriable error (Kafka's default: Integer.MAX_VALUE,
    so delivery.timeout.ms is the real bound). 0 reports the first error."""
    retry_backoff_ms: KafkaMs = Field(default=100, alias="retry.backoff.ms", ge=0, le=INT32_MAX)
    """The first retry's backoff; each later one doubles, with +/-20% jitter (KIP-580 ExponentialBackoff)."""
    retry_backoff_max_ms: KafkaMs = Field(default=1000, alias="retry.backoff.max.ms", ge=0, le=INT32_MAX)
    """The cap of the retry backoff (applied after the jitter); also paces metadata refreshes."""
    buffer_memory: KafkaBytes = Field(default=33_554_432, alias="buffer.memory", ge=0)
    """Bytes the producer may hold in batches not yet done (BufferPool); each new batch takes batch.size (or
    its first record, if larger). When it is used up, send() blocks: the open-loop arrivals wait (their
    latency still counts from their intended time) and every queued batch is sent at once."""
    max_block_ms: KafkaMs = Field(default=60_000, alias="max.block.ms", ge=0, le=INT32_MAX)
    """How long send() waits for buffer memory; then the record fails (BufferExhaustedException, a
    TimeoutException: REQUEST_TIMED_OUT in the records table, attempts 0)."""
    enable_idempotence: bool = Field(default=True, alias="enable.idempotence")
    """Idempotent producer (Kafka's default): per-partition sequence numbers let the leader drop a retried
    batch it already has, so retries write each record once and in order. It needs acks=all, retries > 0
    and max.in.flight.requests.per.connection <= 5: set explicitly to true with another acks or retries, that
    is an error; left out, idempotence is silently turned off (ProducerConfig.postProcessAndValidateIdempotenceConfigs),
    e.g. an acks=1 producer is not idempotent, and the resolved scenario shows false. More than 5 requests in
    flight is an error unless enable.idempotence is false (Kafka 4.0+ no longer turns idempotence off for
    it). The producer id is assigned per producer (InitProducerId is not simulated)."""
    partitioner: Literal["sticky", "round_robin", "random"] = "sticky"
    """How records pick a partition: sticky (Kafka's default for records without a key: fill a batch for
    one partition, then move on), round_robin (one record each in turn), random (uniform per record)."""
    rate: Rate = Field(gt=0)
    """Records per second ("5000/s", "300/m")."""
    arrival: Arrival = Field(default_factory=PoissonArrival)
    """poisson | constant | {type: on_off, on: 1s, off: 4s}."""
    record_size: SizeDistribution = Field(default_factory=lambda: SizeConstant(value=1024))
    """Bytes per record (a size or a size distribution)."""
    reconnect_backoff_ms: ReconnectBackoffMs = 50
    reconnect_backoff_max_ms: ReconnectBackoffMaxMs = 1000
    socket_connection_setup_timeout_ms: SocketConnectionSetupTimeoutMs = 10_000
    socket_connection_setup_timeout_max_ms: SocketConnectionSetupTimeoutMaxMs = 30_000
    link: Link | None = None
    """This producer's link; keys left out come from network.default_link. Resolved after validation."""
    stalls: Stalls | None = None
    """Simulator-only: the producer host's stop-the-world stalls (its JVM's garbage collection), drawn all run
    long; absent = none."""
    costs: ProducerCosts | None = None
    """Simulator-only: the Sender's time to build each request; absent = free (a request goes when it is
    drained). The application's send() stays free."""

    @model_validator(mode="after")
    def _reconnect_backoff(self) -> ProducerConfig:
        reconnect_backoff_max(self)
        return self

    @model_validator(mode="after")
    def _delivery_timeout(self) -> ProducerConfig:
        # KafkaProducer.configureDeliveryTimeout: an explicit delivery.timeout.ms below the sum is a
        # ConfigException; a default one is silently raised to the sum.
        needed = self.linger_ms + self.request_timeout_ms
        if self.delivery_timeout_ms < needed:
            if "delivery_timeout_ms" in self.model_fields_set:
                message = f"must be >= linger.ms + request.timeout.ms ({needed}), as Kafka requires"
                fail_at([(("delivery.timeout.ms",), message)])
            object.__setattr__(self, "delivery_timeout_ms", needed)
        return self

    @model_validator(mode="after")
    def _idempotence(self) -> ProducerConfig:
        # ProducerConfig.postProcessAndValidateIdempotenceConfigs: a conflict with an explicit
        # enable.idempotence=true is a ConfigException; with the default, idempotence is turned off -- but for
        # max.in.flight.requests.per.connection above 5, a ConfigException either way since Kafka 4.0.
        if not self.enable_idempotence:
            return self
        explicit = "enable_idempotence" in self.model_fields_set
        if self.max_in_flight_requests_per_connection > 5 and not explicit:
            fail_at([(("max.in.flight.requests.per.connection",),
                      "must be at most 5 for the idempotent producer, Kafka's default (allowed: 1 to 5; or set "
                      "enable.idempotence: false)")])
        conflicts: list[tuple[tuple[str, ...], str]] = []
        if self.retries == 0:
            conflicts.append((("retries",), "must be non-zero when enable.idempotence is true (allowed: 1 and more)"))
        if self.acks != -1:
            conflicts.append((("acks",), "must be all when enable.idempotence is true, otherwise idempotence "
                                         "cannot be guaranteed (allowed: all, -1)"))
        if self.max_in_flight_requests_per_connection > 5:
            conflicts.append((("max.in.flight.requests.per.connection",),
                              "must be at most 5 when enable.idempotence is true (allowed: 1 to 5)"))
        if conflicts:
            if explicit:
                fail_at(conflicts)
            object.__setattr__(self, "enable_idempotence", False)
        return self


class ConsumerCosts(ScenarioModel):
    """Simulator-only: the consumer application's time to handle what poll() returns (deserialisation and the
    application's own work), spent by its one application thread, so records queue behind earlier ones. A
    batch counts as consumed when its last record is handled. Kafka shows this time as the consumer's
    time-between-poll-avg/max (and poll-idle-ratio-avg); fetch-latency-avg is the fetch round trip."""

    per_poll: DurationDistribution = Field(default_factory=lambda: constant_ms(0.0))
    """Once per poll() that returns records (all the batches buffered since the last poll)."""
    per_record: DurationDistribution = Field(default_factory=lambda: constant_ms(0.0))
    """Per record handled (drawn once per batch, times its record count)."""


class ConsumerConfig(ScenarioModel):
    """One consumer fetching every partition of `topic` from the log start, long-polling the leader."""

    name: str = Field(pattern=CLIENT_NAME_PATTERN)
    topic: str
    fetch_min_bytes: KafkaBytes = Field(default=1, alias="fetch.min.bytes", ge=0, le=INT32_MAX)
    fetch_max_wait_ms: KafkaMs = Field(default=500, alias="fetch.max.wait.ms", ge=0, le=INT32_MAX)
    """DelayedFetch delay (ReplicaManager.fetchMessages)."""
    max_partition_fetch_bytes: KafkaBytes = Field(default=1024 * 1024, alias="max.partition.fetch.bytes", ge=0, le=INT32_MAX)
    fetch_max_bytes: KafkaBytes = Field(default=50 * 1024 * 1024, alias="fetch.max.bytes", ge=0, le=INT32_MAX)
    request_timeout_ms: KafkaMs = Field(default=30_000, alias="request.timeout.ms", ge=0, le=INT32_MAX)
    reconnect_backoff_ms: ReconnectBackoffMs = 50
    reconnect_backoff_max_ms: ReconnectBackoffMaxMs = 1000
    socket_connection_setup_timeout_ms: SocketConnectionSetupTimeoutMs = 10_000
    socket_connection_setup_timeout_max_ms: SocketConnectionSetupTimeoutMaxMs = 30_000
    link: Link | None = None
    """This consumer's link; keys left out come from network.default_link. Resolved after validation."""
    stalls: Stalls | None = None
    """Simulator-only: the consumer host's stop-the-world stalls (its JVM's garbage collection), drawn all run
    long; absent = none."""
    costs: ConsumerCosts | None = None
    """Simulator-only: the application's processing time per poll and per record; absent = free (each batch
    is consumed when its fetch response arrives)."""

    @model_validator(mode="after")
    def _reconnect_backoff(self) -> ConsumerConfig:
        reconnect_backoff_max(self)
        return self


class FollowerCosts(ScenarioModel):
    """Simulator-only: time a follower spends appending fetched data to its own log."""

    append: DurationDistribution = Field(default_factory=lambda: constant_ms(0.02))
    """Per record batch appended."""
    append_per_kib: DurationDistribution = Field(default_factory=lambda: constant_ms(0.005))
    """Per KiB appended."""


# Kafka's replica fetcher configs are broker configs (ReplicationConfigs); they once lived in `followers:`.
MOVED_TO_BROKER = (
    "num.replica.fetchers",
    "replica.fetch.wait.max.ms",
    "replica.fetch.min.bytes",
    "replica.fetch.max.bytes",
    "replica.fetch.response.max.bytes",
    "replica.fetch.backoff.ms",
)


def moved_message(key: str) -> str:
    return f"moved to broker.{key} (a broker config in Kafka)"


class FollowerConfig(ScenarioModel):
    """The followers' simulator costs and their link to the leader.

    Kafka's replica fetcher configs (`replica.fetch.*`, `num.replica.fetchers`) are broker configs: they sit
    in `broker:` (and `cluster.overrides`). Without `cluster:` the followers are brokers 1..RF-1 (RF = the
    largest replication factor), one replica fetcher each; with it, every broker follows some partitions.
    """

    moved_keys: ClassVar[dict[str, str]] = {key: f"broker.{key}" for key in MOVED_TO_BROKER}

    costs: FollowerCosts = Field(default_factory=FollowerCosts)
    link: Link | None = None
    """The followers' link; keys left out come from network.default_link. Resolved after validation."""

    @model_validator(mode="before")
    @classmethod
    def _moved(cls, data: Any) -> Any:
        if isinstance(data, dict):
            moved = [((key,), moved_message(key)) for key in MOVED_TO_BROKER if key in data]
            if moved:
                fail_at(moved)
        return data
