"""What the clients and the broker report, turned into the recorder's rows: ``RunRecorder``, the run's
observer when invariant checks are off (``kafkasim.run.observer.CheckedRunObserver`` adds them)."""

from __future__ import annotations

from collections.abc import Callable

from kafkasim.broker.errors import Errors
from kafkasim.broker.records import RecordBatch, TopicPartition
from kafkasim.clients.accumulator import ProducerBatch
from kafkasim.network.messages import RequestEnvelope
from kafkasim.network.observer import Observer
from kafkasim.record.record_latency import RecordLatency
from kafkasim.record.recorder import (
    SEGMENT_HW_PASSED,
    SEGMENT_HW_REACHED,
    SEGMENT_ROLLED,
    BatchTrace,
    Recorder,
)
from kafkasim.record.retransmissions import RetransmissionRow


class RunRecorder(Observer):
    """The run's observer, recording: turns envelopes and producer batches into recorder rows.

    A request's row is written once both sides are done with it: the client (response, timeout, acks=0
    sent) and the broker (response sent or dropped) -- so a response that arrives after the client gave
    up still has its broker-side timing. Batches whose offset the producer never learned although they
    may be in the log (acks=0, timeouts) wait until a consumer reads them, which tells their offset.
    """

    def __init__(
        self,
        recorder: Recorder,
        consumers_by_topic: dict[str, int],
        on_request: Callable[[RequestEnvelope], None] | None = None,
        now: Callable[[], float] | None = None,
        warmup_ms: float = 0.0,
    ) -> None:
        self.recorder = recorder
        # The simulated time of events reported without one (segment rolls come from the SimPy-free broker).
        self._now = now
        self._consumers_by_topic = consumers_by_topic
        self._awaiting_broker: dict[int, RequestEnvelope] = {}
        self._unknown_offset: dict[int, BatchTrace] = {}
        self._on_request = on_request
        self.requests_recorded = 0
        # Per-record latencies leave out the records intended during the warm-up, as the summary's do.
        self.record_latency = RecordLatency(warmup_ms)
        recorder.on_first_consumed = self._first_consumed
        # Every TCP retransmission timer expiry (kafkasim.record.retransmissions): rare, kept in memory.
        self.retransmissions: list[RetransmissionRow] = []

    def _first_consumed(self, batch: BatchTrace, consumed_ms: float) -> None:
        intended = batch.intended
        if intended is not None:
            self.record_latency.add_e2e(batch.acks, intended, consumed_ms)

    # --- requests ----------------------------------------------------------------------------------

    def request_finished(self, envelope: RequestEnvelope) -> None:
        envelope.client_done = True
        if envelope.response_sent or (envelope.connection is None and envelope.expects_response):
            # Done on both sides, or never picked up by the broker (its connection is closed, so it never
            # will be). A processor sets `connection` when it *starts* reading a request: one whose read is
            # under way when the client gives up is still handled, and written when the broker is done.
            self._write(envelope)
        else:
            self._awaiting_broker[envelope.request_id] = envelope

    def response_done(self, envelope: RequestEnvelope) -> None:
        if envelope.client_done and self._awaiting_broker.pop(envelope.request_id, None) is not None:
            self._write(envelope)

    def _write(self, envelope: RequestEnvelope) -> None:
        if self._on_request is not None:
            self._on_request(envelope)
        # The recorder keeps only the fields it writes: drop what a row does not need before it waits in the
        # recorder's buffer (up to max_rows_in_memory rows), above all the per-partition request and response
        # bodies (a fetch of N partitions carries N PartitionData and N results); the row keeps the response's
        # size and partition count (RequestEnvelope.set_response).
        if self._body_unused(envelope):
            envelope.body = None
        envelope.response = None
        envelope.on_response = None
        envelope.connection = None
        self.recorder.finish_request(envelope)
        self.requests_recorded += 1

    def _body_unused(self, envelope: RequestEnvelope) -> bool:
        """May a written row drop its request body? A request that expects a response reaches its row once the
        broker read it, so ``KafkaApis.handle`` has taken what it needs from the body (or never will: the
        broker never read it); nothing here reads it afterwards. An acks=0 produce can be done on both sides
        before a handler takes it: its body stays."""
        return envelope.expects_response

    # --- batches -----------------------------------------------------------------------------------

    def batch_finished(self, producer: str, acks: int, batch: object, ack_ms: float, error: Errors,
                       base_offset: int) -> None:
        assert isinstance(batch, ProducerBatch)
        if error == Errors.NONE:
            self.record_latency.add(acks, batch, ack_ms)
        self._finish_batch(self.batch_trace(producer, acks, batch, ack_ms, base_offset, error), error)

    def batch_trace(
        self, producer: str, acks: int, batch: ProducerBatch, ack_ms: float, base_offset: int, error: Errors
    ) -> BatchTrace:
        return BatchTrace(
            batch.batch_id,
            producer,
            batch.tp.topic,
            batch.tp.partition,
            batch.record_count,
            batch.size_in_bytes,
            acks,
            batch.intended_ms[0],
            batch.created_ms,
            batch.send_ms,
            ack_ms,
            base_offset,
            int(error),
            batch.request_id,
            batch.sends,
            batch.first_request_id,
            batch.sequence_reset,
            batch.intended_ms,
        )

    def _finish_batch(self, trace: BatchTrace, error: Errors) -> None:
        may_be_in_log = trace.offset < 0 and error in (
            Errors.NONE,  # acks=0: appended, offset unknown to the producer
            Errors.REQUEST_TIMED_OUT,
            Errors.NETWORK_EXCEPTION,
        )
        if may_be_in_log and self._consumers_by_topic.get(trace.topic, 0) > 0:
            self._unknown_offset[trace.batch_id] = trace
        else:
            self.recorder.finish_batch(trace)

    def batch_consumed(self, consumer: str, batch: RecordBatch, receive_ms: float) -> None:
        pending = self._unknown_offset.pop(batch.batch_id, None) if self._unknown_offset else None
        if pending is not None:
            pending.offset = batch.base_offset
            self.recorder.finish_batch(pending)
        self.recorder.batch_consumed(batch.batch_id, consumer, receive_ms, batch.base_offset)

    # --- TCP retransmissions ---------------------------------------------------------------------------

    def tcp_retransmission(self, client: str, broker: int, direction: str, time_ms: float, lost_since_ms: float,
                           outcome: str) -> None:
        self.retransmissions.append((time_ms, client, broker, direction, lost_since_ms, outcome))

    # --- segments ----------------------------------------------------------------------------------

    def segment_rolled(self, broker_id: int, tp: TopicPartition, base_offset: int, reason: str,
                       leader: bool) -> None:
        self.recorder.segment_event(self._time(), broker_id, tp.topic, tp.partition, base_offset, SEGMENT_ROLLED,
                                    reason, leader)

    def high_watermark_reached_segment(self, broker_id: int, tp: TopicPartition, base_offset: int,
                                       passed: bool) -> None:
        self.recorder.segment_event(self._time(), broker_id, tp.topic, tp.partition, base_offset,
                                    SEGMENT_HW_PASSED if passed else SEGMENT_HW_REACHED, "", True)

    def _time(self) -> float:
        now = self._now
        return now() if now is not None else float("nan")

    # --- end of run --------------------------------------------------------------------------------

    def flush(self, unfinished: list[RequestEnvelope]) -> None:
        """Record what is still open at the end: requests in flight, batches of unknown offset."""
        for envelope in self._awaiting_broker.values():
            self._write(envelope)
        self._awaiting_broker.clear()
        for envelope in unfinished:
            if not envelope.client_done:
                self._write(envelope)
        for trace in self._unknown_offset.values():
            self.recorder.finish_batch(trace)
        self._unknown_offset.clear()
