"""Kafka's ``RequestChannel``: the queue between the network threads and the request handler threads.

* The request queue (``ArrayBlockingQueue(queued.max.requests)``): ``send_request`` is
  ``RequestChannel.sendRequest``, a ``put`` from a processor. A handler waiting in ``receiveRequest`` takes
  the request at once; otherwise it queues; when the queue is full the processor blocks in ``put`` (its
  connections are all stalled: back-pressure) until a handler takes a request. When the handlers' wake-ups
  take time (``signal_waiters``) the put queues the request and signals one waiting handler
  (``notEmpty.signal()``), which takes the oldest request once it runs, if a handler that asked before it
  (one done with its previous request, or one signalled later whose wake-up was shorter) has not: the
  handlers take the requests in the order they were put, as from Kafka's one queue.
* The handlers' side: ``receive_request`` is ``RequestChannel.receiveRequest``. It returns the oldest
  request, or ``None`` after noting the handler as waiting (Kafka's handler thread blocked in ``poll``); a
  waiting handler gets the next request ``send_request`` brings.
* ``send_response`` is ``RequestChannel.sendResponse``: stamps ``responseCompleteTimeNanos`` (and
  ``apiLocalCompleteTimeNanos`` if still unset) and puts the response on the owning processor's response
  queue (``Processor.enqueueResponse``).
* The gauges ``RequestQueueSize`` and ``ResponseQueueSize`` (per processor).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from kafkasim.network.messages import RequestEnvelope

if TYPE_CHECKING:
    from simpy import Environment

    from kafkasim.network.socket_server import Processor

RequestReceiver = Callable[[RequestEnvelope], None]


class RequestChannel:
    """The request queue, bounded by ``queued.max.requests``, and the way back to the processors."""

    __slots__ = ("env", "queue_size", "request_queue", "processors", "signal_waiters", "on_request", "_waiting",
                 "_blocked")

    def __init__(self, env: Environment, queue_size: int = 500) -> None:
        self.env = env
        self.queue_size = queue_size
        self.request_queue: deque[RequestEnvelope] = deque()
        self.processors: list[Processor] = []
        # Whether a put signals a waiting handler, which takes the oldest request once it runs (its wake-up takes
        # time: KafkaRequestHandlerPool), rather than handing the request to it (it runs at once).
        self.signal_waiters = False
        # Told of every request a processor puts (kafkasim.run.stalls: a broker's stalls every so many requests).
        self.on_request: Callable[[], None] | None = None
        # Handlers waiting in receiveRequest, in the order they started waiting.
        self._waiting: deque[RequestReceiver] = deque()
        # Processors blocked in put(), in the order they blocked (each holds its request in ``blocked``).
        self._blocked: deque[Processor] = deque()

    def add_processor(self, processor: Processor) -> None:
        """``RequestChannel.addProcessor``: the SocketServer registers each of its processors, in the order of
        their ids (a channel names its processor by id: ``KafkaChannel.processor``)."""
        assert processor.index == len(self.processors), f"processor {processor.index} added out of order"
        self.processors.append(processor)

    # --- requests ----------------------------------------------------------------------------------

    def send_request(self, processor: Processor, envelope: RequestEnvelope) -> bool:
        """``processor`` puts ``envelope``; False if the queue is full and the processor now blocks."""
        if self.on_request is not None:
            self.on_request()
        waiting = self._waiting
        if waiting and not self.signal_waiters:
            waiting.popleft()(envelope)
            return True
        if len(self.request_queue) < self.queue_size:
            self.request_queue.append(envelope)
            if waiting:
                # ArrayBlockingQueue.put -> notEmpty.signal(): one waiting handler wakes, and takes the oldest
                # request when it runs (receive_request), unless other handlers have taken them all by then.
                waiting.popleft()(envelope)
            return True
        processor.blocked = envelope
        self._blocked.append(processor)
        return False

    def receive_request(self, receiver: RequestReceiver) -> RequestEnvelope | None:
        """A handler asks for the next request: the oldest one, or None (``receiver`` gets the next one).

        Taking a request frees a slot: the first processor blocked in put() completes its put and resumes.
        """
        if not self.request_queue:
            self._waiting.append(receiver)
            return None
        envelope = self.request_queue.popleft()
        if self._blocked:
            p = self._blocked.popleft()
            blocked = p.blocked
            assert blocked is not None
            p.blocked = None
            self.request_queue.append(blocked)
            p.resume()
        return envelope

    @property
    def idle_handlers(self) -> int:
        """Handlers waiting for a request."""
        return len(self._waiting)

    # --- responses ---------------------------------------------------------------------------------

    def send_response(self, envelope: RequestEnvelope) -> None:
        """``RequestChannel.sendResponse``: onto the owning processor's response queue."""
        now = self.env.now
        envelope.response_complete_ms = now
        if not envelope.locally_completed:
            # A response sent before KafkaApis.handle finished marks local completion (RequestMetrics).
            envelope.locally_completed = True
            envelope.local_complete_ms = now
        channel = envelope.connection
        assert channel is not None  # a processor read the request
        self.processors[channel.processor].enqueue_response(envelope)

    # --- gauges ------------------------------------------------------------------------------------

    @property
    def request_queue_size(self) -> int:
        """``RequestQueueSize``, counting the requests of processors blocked in put()."""
        return len(self.request_queue) + len(self._blocked)

    def response_queue_sizes(self) -> list[int]:
        """``ResponseQueueSize`` of each processor."""
        return [len(p.responses) for p in self.processors]
