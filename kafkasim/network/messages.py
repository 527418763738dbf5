"""What travels between a client and the broker: a `RequestEnvelope` per request and, once the broker built
one, its `Response`.

The envelope is the request (Kafka's ``RequestChannel.Request``): what the client sent and, as Kafka's
``Request`` does, the ``RequestMetrics`` timestamps of its way through the broker, plus the client's own
(intended send, actual send, receive). It is also the request's row of the ``requests`` table: the recorder
takes the finished envelope as is, its response columns copied from the `Response` when the broker built it
(``set_response``, as Kafka's ``Request.updateRequestMetrics`` reads the ``Response``). All times are float
simulated milliseconds; NaN means "not reached" (a request still in flight at the end of a run, an acks=0
produce that never gets a response, a client timeout) -- a row's value: the code asks the explicit flags
(``locally_completed``, ``response_sent``, ``response_received``), never whether a timestamp is NaN.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Final, Literal

from kafkasim.broker.fetch import PartitionData
from kafkasim.broker.fetch_session import LEGACY_METADATA, FetchMetadata, FetchResponse
from kafkasim.broker.produce import PartitionResponse
from kafkasim.broker.records import RecordBatch, TopicPartition

if TYPE_CHECKING:
    from kafkasim.broker.errors import Errors
    from kafkasim.network.kafka_channel import KafkaChannel

NAN: Final = float("nan")

Api = Literal["Produce", "FetchConsumer", "FetchFollower"]
API_PRODUCE: Api = "Produce"
API_FETCH_CONSUMER: Api = "FetchConsumer"
API_FETCH_FOLLOWER: Api = "FetchFollower"

# Kafka's RequestMetrics timestamps (RequestChannel.Request) framed by the client's own: the envelope's
# timestamp attributes and, in this order, the timestamp columns of the recorder's ``requests`` table.
REQUEST_TIMESTAMPS: Final = (
    "intended_ms",
    "client_send_ms",
    "start_ms",
    "dequeue_ms",
    "local_complete_ms",
    "response_complete_ms",
    "response_dequeue_ms",
    "end_ms",
    "client_receive_ms",
)

# Simplified wire sizes: a request header plus a per-partition header; the record bytes
# are the batches' own sizes (RecordBatch.size_in_bytes already includes Kafka's 61-byte batch header).
PRODUCE_REQUEST_OVERHEAD_BYTES: Final = 100
PRODUCE_PARTITION_OVERHEAD_BYTES: Final = 60
PRODUCE_RESPONSE_OVERHEAD_BYTES: Final = 40
PRODUCE_RESPONSE_PARTITION_BYTES: Final = 40
# The fetch request overhead includes the session fields (session id, epoch: 8 bytes), which every request
# since v7 carries whether or not it uses a session. A partition entry is 32 bytes of fields (partition,
# current_leader_epoch, fetch_offset, last_fetched_epoch, log_start_offset, partition_max_bytes) plus 8 of
# topic framing; a forgotten partition (forgotten_topics_data) is its partition index plus the same framing.
FETCH_REQUEST_OVERHEAD_BYTES: Final = 100
FETCH_REQUEST_PARTITION_BYTES: Final = 40
FETCH_FORGOTTEN_PARTITION_BYTES: Final = 8
FETCH_RESPONSE_OVERHEAD_BYTES: Final = 40
FETCH_RESPONSE_PARTITION_BYTES: Final = 60


class ProduceRequestData:
    """A ProduceRequest: acks, the ``timeout`` field (the DelayedProduce delay,
    ``KafkaApis.handleProduceRequest``) and the batches."""

    __slots__ = ("acks", "timeout_ms", "entries")

    def __init__(self, acks: int, timeout_ms: int, entries: Mapping[TopicPartition, Sequence[RecordBatch]]) -> None:
        self.acks = acks
        self.timeout_ms = timeout_ms
        self.entries = entries


class FetchRequestData:
    """A FetchRequest as the client sends it: request-level limits and per-partition ``PartitionData``.

    The broker turns the request fields into ``FetchParams`` (capping ``max_bytes`` by its own
    ``fetch.max.bytes``, ``KafkaApis.handleFetchRequest``) when a handler takes the request. ``replica_id`` >=
    0 is a follower. ``metadata`` is the fetch session's (session id, epoch) -- sessionless by default
    (``FetchMetadata.LEGACY``) -- and ``to_forget`` the partitions an incremental request drops from its
    session (``forgottenTopicsData``); ``fetch_infos`` then holds only the partitions the request sends.
    """

    __slots__ = (
        "replica_id",
        "max_wait_ms",
        "min_bytes",
        "max_bytes",
        "fetch_infos",
        "replica_epoch",
        "metadata",
        "to_forget",
    )

    def __init__(
        self,
        replica_id: int,
        max_wait_ms: int,
        min_bytes: int,
        max_bytes: int,
        fetch_infos: Sequence[tuple[TopicPartition, PartitionData]],
        replica_epoch: int = -1,
        *,
        metadata: FetchMetadata = LEGACY_METADATA,
        to_forget: Sequence[TopicPartition] = (),
    ) -> None:
        self.replica_id = replica_id
        self.max_wait_ms = max_wait_ms
        self.min_bytes = min_bytes
        self.max_bytes = max_bytes
        # In request order (reads follow this order, ReplicaManager.readFromLog).
        self.fetch_infos = fetch_infos
        self.replica_epoch = replica_epoch
        self.metadata = metadata
        self.to_forget = to_forget


ProduceResponseData = dict[TopicPartition, PartitionResponse]
"""A ProduceResponse: each partition's ``PartitionResponse``."""


class Response:
    """Kafka's ``RequestChannel.Response`` (a ``SendResponse``): what the broker sends back for one request --
    ``body``, a produce's ``{tp: PartitionResponse}`` or a fetch session context's ``FetchResponse`` (session
    error, session id, and the ``[(tp, LogReadResult)]`` it sends, in read order) -- with its size on the wire
    and the number of partitions it carries (an incremental fetch response omits partitions with no news)."""

    __slots__ = ("body", "size_in_bytes", "partitions")

    def __init__(self, body: ProduceResponseData | FetchResponse, size_in_bytes: int, partitions: int) -> None:
        self.body = body
        self.size_in_bytes = size_in_bytes
        self.partitions = partitions

    def produce_statuses(self) -> ProduceResponseData:
        """A ProduceResponse's partitions."""
        body = self.body
        assert isinstance(body, dict)
        return body

    def fetch_response(self) -> FetchResponse:
        """A FetchResponse."""
        body = self.body
        assert isinstance(body, FetchResponse)
        return body


class RequestEnvelope:
    """One request's life: client -> link -> processor -> request queue -> handler -> (purgatory) ->
    response queue -> processor -> link -> client.

    It is also the request's row: it has every attribute ``kafkasim.record.recorder.RequestRow`` lists
    (request_id, api, client, broker, partitions, response_partitions, request_bytes, response_bytes, acks,
    error, client_timeout and the timestamps), so the recorder takes it as is -- its ``response`` (a separate
    object, dropped once the row is written) leaves its two columns in the row (``set_response``).

    ``broker``: the id of the broker the request went to; the connection sets it when the client sends,
    and the broker's network thread sets it again when it reads the request (its own id), so a request
    that never arrived (dropped, timed out on the way) still names its destination. -1: never sent.

    Timestamps (Kafka's names, ``RequestChannel.Request``): ``start_ms`` (processor finished reading),
    ``dequeue_ms`` (handler took it), ``local_complete_ms`` (end of KafkaApis.handle, or a synchronous
    response), ``response_complete_ms`` (sendResponse called), ``response_dequeue_ms`` (processor took the
    response), ``end_ms`` (response written). Client side: ``intended_ms`` (when open-loop load meant to send
    the oldest record of the request; equals ``client_send_ms`` for closed-loop fetchers), ``client_send_ms``
    and ``client_receive_ms``. Which of them are reached is explicit state: ``locally_completed`` (Kafka's
    ``apiLocalCompleteTimeNanos`` is no longer -1), ``response_sent`` (the broker is done with it: ``end_ms``),
    ``response_received`` (the client read the response: ``client_receive_ms``).
    """

    __slots__ = (
        "request_id",
        "api",
        "client",
        "broker",
        "connection",
        "body",
        "request_bytes",
        *REQUEST_TIMESTAMPS,
        "locally_completed",
        "response_sent",
        "response_received",
        "response",
        "response_bytes",
        "error",
        "client_timeout",
        "expects_response",
        "on_response",
        "read_bytes",
        "read_partitions",
        "read_segments",
        "partitions",
        "response_partitions",
        "acks",
        "client_done",
    )

    def __init__(
        self,
        request_id: int,
        api: Api,
        client: str,
        body: ProduceRequestData | FetchRequestData,
        request_bytes: int,
        intended_ms: float,
        client_send_ms: float,
        *,
        expects_response: bool = True,
        on_response: Callable[[RequestEnvelope], None] | None = None,
    ) -> None:
        self.request_id = request_id
        self.api = api
        self.client = client
        self.broker = -1
        # The broker-side KafkaChannel, set when a processor reads the request; the response goes back on it.
        self.connection: KafkaChannel | None = None
        # None once the row is recorded (RunRecorder drops what the requests table does not need).
        self.body: ProduceRequestData | FetchRequestData | None = body
        self.request_bytes = request_bytes
        self.intended_ms = intended_ms
        self.client_send_ms = client_send_ms
        self.start_ms = NAN
        self.dequeue_ms = NAN
        self.local_complete_ms = NAN
        self.response_complete_ms = NAN
        self.response_dequeue_ms = NAN
        self.end_ms = NAN
        self.client_receive_ms = NAN
        self.locally_completed = False
        self.response_sent = False
        self.response_received = False
        # What the broker sends back, once built (KafkaApis); None again once the row is written.
        self.response: Response | None = None
        self.response_bytes = 0
        self.error: Errors | None = None
        self.client_timeout = False
        # acks=0 produce: the broker sends nothing back (KafkaApis.handleProduceRequest, NoOpResponse).
        self.expects_response = expects_response
        self.on_response = on_response
        # Bytes the handler read from the log for a fetch (drives the read cost), and the partitions it read
        # (a session's every partition for an incremental fetch: IncrementalFetchContext.foreachPartition).
        self.read_bytes = 0
        self.read_partitions = 0
        # The partitions whose answer holds records: each was read from a segment (LocalLog.read), the others
        # were at the log's end or had nothing new.
        self.read_segments = 0
        # Columns of the requests table (the recorder reads the envelope as its RequestRow). `partitions`:
        # the partitions the request carries as sent -- a produce's, a full fetch's every partition, an
        # incremental fetch's new and altered ones only (0 for an idle follower), like `request_bytes`;
        # `response_partitions` and `response_bytes`: its response's (0 without a response), set by
        # set_response.
        self.response_partitions = 0
        if isinstance(body, ProduceRequestData):
            self.partitions = len(body.entries)
            self.acks: int | None = body.acks
        else:
            self.partitions = len(body.fetch_infos)
            self.acks = None
        # Set when the client is done with it; the row is written once the broker is done too.
        self.client_done = False

    def set_response(self, response: Response) -> None:
        """The broker built ``response``: the request holds it until it is sent and read, and its row takes the
        response's size and partition count (Kafka's ``Request.updateRequestMetrics`` reads the ``Response``)."""
        self.response = response
        self.response_partitions = response.partitions
        self.response_bytes = response.size_in_bytes

    def __repr__(self) -> str:
        return f"RequestEnvelope(#{self.request_id} {self.api} from {self.client})"


def produce_request_bytes(entries: Mapping[TopicPartition, Sequence[RecordBatch]]) -> int:
    total = PRODUCE_REQUEST_OVERHEAD_BYTES
    for batches in entries.values():
        total += PRODUCE_PARTITION_OVERHEAD_BYTES
        for batch in batches:
            total += batch.size_in_bytes
    return total


def produce_response_bytes(partitions: int) -> int:
    return PRODUCE_RESPONSE_OVERHEAD_BYTES + PRODUCE_RESPONSE_PARTITION_BYTES * partitions


def fetch_request_bytes(partitions: int, forgotten_partitions: int = 0) -> int:
    """A FetchRequest sending ``partitions`` partitions and forgetting ``forgotten_partitions``: a full request
    sends every partition, an incremental one only the new and altered ones
    (``FetchSessionHandler.Builder.build``); an idle follower's is the bare overhead."""
    return (
        FETCH_REQUEST_OVERHEAD_BYTES
        + FETCH_REQUEST_PARTITION_BYTES * partitions
        + FETCH_FORGOTTEN_PARTITION_BYTES * forgotten_partitions
    )


def fetch_request_data_bytes(body: FetchRequestData) -> int:
    """The size of the request ``body`` as sent."""
    return fetch_request_bytes(len(body.fetch_infos), len(body.to_forget))


def fetch_response_data_bytes(response: FetchResponse) -> int:
    """The size of a fetch session context's response as sent: the partitions it carries and their records."""
    record_bytes = 0
    for _tp, result in response.responses:
        record_bytes += result.info.size_in_bytes
    return fetch_response_bytes(len(response.responses), record_bytes)


def fetch_response_bytes(partitions: int, record_bytes: int) -> int:
    """A FetchResponse carrying ``partitions`` partitions and ``record_bytes`` of records. An incremental
    response carries only the partitions ``CachedPartition.maybeUpdateResponseData`` keeps (records, HW or
    log start changes, errors); the others cost nothing. A session error carries no partition."""
    return FETCH_RESPONSE_OVERHEAD_BYTES + FETCH_RESPONSE_PARTITION_BYTES * partitions + record_bytes
