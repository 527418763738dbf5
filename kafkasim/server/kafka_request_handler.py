"""Kafka's ``KafkaRequestHandlerPool``: ``num.io.threads`` request handler threads (``KafkaRequestHandler``)
taking requests from the ``RequestChannel`` in FIFO order and running ``KafkaApis`` on them, as
event-driven state machines on the SimPy clock (one heap event per service time).

``KafkaRequestHandler.run`` for one request:

* The handler takes it (``requestDequeueTimeNanos``): at once if it was waiting in ``receiveRequest``.
* Produce: service time ``request + append_per_kib * KiB + (per_partition + append) * partitions`` first, then
  ``KafkaApis.handleProduceRequest``
  (the data becomes visible when the write is done; an acks 0/1 response is sent then).
* Fetch: ``KafkaApis.handleFetchRequest`` at once (the read sees the log as it is when the handler
  starts), then service time ``request + read_per_kib * KiB read + per_partition * partitions read`` (an
  incremental fetch reads every partition of its session) ``+ segment_read * partitions answered with records``
  (``LocalLog.read`` reads a segment only below the log's end), plus ``follower_fetch * partitions named`` for a
  follower's (Partition.updateFollowerFetchState moving the follower's log end offset; an incremental request
  names the partitions whose fetch offset moved); its response, if answered at once, is sent when that has
  elapsed. A follower fetch whose HW advance completes others (``Partition.fetchRecords`` reads, then
  ``updateFollowerFetchState`` -> ``tryCompleteDelayedRequests`` completes the DelayedProduce and consumers'
  DelayedFetch it unblocked, on this thread, before ``fetchMessages`` calls back) answers them when its read
  and follower bookkeeping are done, a parked fetch after its completion (below), and spends its request cost
  (the callback: ``processResponseCallback`` building its response) after them; its own response goes last.
  Simplification: a fetch of several partitions reads them all before completing anything (Kafka completes
  a partition's waiters before reading the next partition), and its whole request cost counts as the
  response's building (Kafka's handler also parses and authorises before the read). On this project's
  cluster a consumer's answer so completed left 0.07-0.08 ms before the follower's own (docs/calibration.md).
* Then the ``finally`` of ``KafkaApis.handle``: ``ReplicaManager.tryCompleteActions`` (parked follower
  fetches are usually completed here, by the producer's handler), then ``apiLocalCompleteTimeNanos`` if
  still unset. Each parked fetch a request completes (here, or a consumer's that a follower's HW advance
  completes in ``fetch_messages``) holds the handler for its read and response (``DelayedFetch.onComplete``:
  ``complete_fetch + read_per_kib * KiB read + per_partition * partitions read + segment_read * partitions
  with records``), and its response goes out
  when that is done, one after another: an acks=all produce's LocalTimeMs includes completing its followers'
  fetches, as on a real broker (an acks=1 produce's ended when its response was sent). A parked acks=all
  produce that another request completes (most often a follower fetch's HW advance) holds its handler
  ``complete_fetch`` too (``DelayedProduce.onComplete`` runs the produce's response callback,
  ``KafkaApis.handleProduceRequest``'s ``sendResponseCallback``, on the completing thread). Simplification:
  one cost for completing either kind; a fit on acks=1 runs, with no parked produce, cannot tell them apart.
  The broker's expiration reapers are poked (a parked operation may have a new earliest expiration), and the
  handler asks the ``RequestChannel`` for the next request.

A stop-the-world pause of the broker (``stw``) stops the handlers: a request taken meanwhile starts, and a
service time that ends meanwhile completes, only when the pause ends. ``disk_factor`` (a ``slow_disk``
fault) multiplies the append part of a produce's service time (``append_per_kib``).

A log flush (``flush.messages``, kafkasim.broker.disk) holds the handler thread: when the broker has a
``disk``, a produce's append may flush, and the handler waits for its flushes (queued behind the disk's
other work) before it sends the response and runs ``tryCompleteActions`` -- ``UnifiedLog.append`` calls
``flush`` before returning, inside ``LocalTimeMs``. With a bounded page cache (``disk.page_cache``), a fetch
answered at once that reads batches older than the cache holds reads them from the disk: its service time
grows by the disk read, queued behind the disk's other work (Kafka's read is a ``FileChannel`` transfer the
kernel serves from the disk on a page-cache miss; the handler thread or, for sendfile, the network thread
waits -- here the handler, a simplification).

Simplification: the handlers' service times are their only CPU modelled; purgatory checks and timer work
take no simulated time, and the action queue only the fetches it completes. A completed fetch reads the log
as it is when the completing check runs, not when its turn on the thread comes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Final

from kafkasim.broker.disk import Disk
from kafkasim.network.messages import API_FETCH_FOLLOWER, API_PRODUCE, RequestEnvelope
from kafkasim.network.observer import Observer
from kafkasim.network.request_channel import RequestChannel
from kafkasim.server.expiration_reaper import ExpirationReaper
from kafkasim.server.kafka_apis import KafkaApis
from kafkasim.sim.calls import Call, Pausable
from kafkasim.sim.cpu_meter import CpuMeter
from kafkasim.sim.distributions import ConstantSampler, constant_value
from kafkasim.sim.host_cpu import HostCpu, hold
from kafkasim.sim.machine_load import MachineLoad
from kafkasim.sim.preemption import Preemption

if TYPE_CHECKING:
    from simpy import Environment

    from kafkasim.network.socket_server import Processor

Sampler = Callable[[], float]
KIB: Final = 1024.0


_NO_COST: Final = ConstantSampler(0.0)

# What a handler does when a request's responses are sent (KafkaRequestHandlerPool._send_all).
_FINISH: Final = 0  # the action queue: KafkaApis.handle's finally
_END: Final = 1  # the request's end (the action queue ran)
_RESPOND: Final = 2  # the rest of a fetch's handling, then its own response (it completed others mid-handler)


@dataclass(frozen=True, slots=True)
class RequestHandlerCosts:
    """A handler's service-time samplers (zero-argument callables returning ms), from the scenario.

    A per-KiB cost is drawn once per request and multiplied by the size in KiB.
    """

    request: Sampler
    append_per_kib: Sampler
    read_per_kib: Sampler
    # Per partition of a produce, and per partition a fetch reads (a session's every partition).
    per_partition: Sampler = _NO_COST
    # Per partition a produce appends, beyond its bytes (Partition.appendRecordsToLeader, UnifiedLog.append).
    append: Sampler = _NO_COST
    # Per partition a follower's fetch names (its fetch offset moved), beyond a consumer's cost
    # (Partition.updateFollowerFetchState).
    follower_fetch: Sampler = _NO_COST
    # Per parked fetch a request completes (DelayedFetch.onComplete), beyond its read (read_per_kib, per_partition);
    # per parked produce a request completes as well (DelayedProduce.onComplete: the response callback).
    complete_fetch: Sampler = _NO_COST
    # Per partition a fetch's answer holds records of (LocalLog.read from a segment; none at the log's end).
    segment_read: Sampler = _NO_COST
    # How long a handler waiting in receiveRequest takes to run once given a request (the host's scheduling
    # latency); None: at once.
    wakeup: Sampler | None = None
    # The machine's interruptions of a handler's work (machine_preemption, kafkasim.sim.preemption); None: none.
    preemption: Preemption | None = None

    def fixed(self, per_kib: Sampler, per_partition: Sampler, base: Sampler | None = None
              ) -> tuple[float, float, float] | None:
        """(``base``, ``per_kib``, per_partition + ``per_partition``) if all are constants (read once, not drawn
        per request); ``base`` defaults to the request cost."""
        request, kib = constant_value(self.request if base is None else base), constant_value(per_kib)
        shared, own = constant_value(self.per_partition), constant_value(per_partition)
        if request is None or kib is None or shared is None or own is None:
            return None
        return request, kib, shared + own


class KafkaRequestHandlerPool:
    """``num_io_threads`` handlers between ``request_channel`` and ``apis``."""

    def __init__(
        self,
        env: Environment,
        request_channel: RequestChannel,
        apis: KafkaApis,
        costs: RequestHandlerCosts,
        *,
        num_io_threads: int = 8,
        observer: Observer,
        reapers: Sequence[ExpirationReaper] = (),
        stw: Pausable | None = None,
        load: MachineLoad | None = None,
    ) -> None:
        self.env = env
        self.stw = stw if stw is not None else Pausable()
        # The machine's running threads when the brokers share one (kafkasim.sim.machine_load): a woken handler
        # waits longer for each.
        self.load = load
        # Handlers between taking a request (_handle) and going back for the next (_end): what this pool adds to
        # the machine's running threads.
        self.running = 0
        # Work started after the pool has been idle costs more (machine_cold_start, kafkasim.sim.cold_start): the
        # pool is idle from the moment its last handler at work goes back to the queue (_end) until one takes a
        # request (_handle).
        self._cold = load.cold if load is not None else None
        self._idle_since = 0.0
        # A handler whose response woke an idle network thread lets it send first (MachineLoad.waker_yields).
        # Or lets it wait for the handler to go back to its queue (MachineLoad.waits_share): both are asked then.
        self._yields = load is not None and (load.waker_yields or load.waits_share > 0.0)
        # The network threads that wait for a handler to go back to its queue, with the request it handles
        # (MachineLoad.waits_share): released at that request's end (_end).
        self._holding: list[tuple[RequestEnvelope, Processor]] = []
        # The requests (by id) whose handling has woken an idle network thread and yielded to it, or let it wait:
        # no later response of the same handling makes the handler yield again (until its _end).
        self._woke: set[int] = set()
        self.disk_factor = 1.0
        # The broker's disk when the run models flushes (BrokerServer): an append's flush holds the handler.
        self.disk: Disk | None = None
        # The host's cores when the scenario sets `cores` (BrokerServer): a service time waits for a core.
        self.cpu: HostCpu | None = None
        self.request_channel = request_channel
        self.apis = apis
        self.costs = costs
        # Constant costs (the default) are read here once: no sampler call per request.
        self._fixed_produce = costs.fixed(costs.append_per_kib, costs.append)
        self._fixed_fetch = costs.fixed(costs.read_per_kib, _NO_COST)
        self._fixed_follower = constant_value(costs.follower_fetch)
        self._fixed_complete = costs.fixed(costs.read_per_kib, _NO_COST, costs.complete_fetch)
        self._fixed_segment = constant_value(costs.segment_read)
        self._preemption = costs.preemption
        self.num_io_threads = num_io_threads
        self._observer = observer
        self._checks = observer.checks
        self._reapers = tuple(reapers)
        self.handler_busy_ms = 0.0
        self.meter = CpuMeter()  # the broker's (BrokerServer), kept across its restarts
        self.requests_handled = 0
        # Bound once: the handlers wait in RequestChannel.receive_request with it. A handler that waited runs
        # after the host's scheduling latency when the scenario sets one (costs.wakeup), as a real handler thread
        # signalled in ArrayBlockingQueue.poll waits for a core; it then takes the oldest request, which a handler
        # that asked first may have taken (RequestChannel.signal_waiters): a request's RequestQueueTimeMs ends
        # when the first handler free to take it runs, not when the one its put signalled does.
        # With the machine's load it also waits for each thread running then on any broker (MachineLoad).
        woken = costs.wakeup is not None or load is not None
        request_channel.signal_waiters = woken
        self._receiver: Callable[[RequestEnvelope], None] = self._wake if woken else self._handle
        for _ in range(num_io_threads):  # every handler thread starts waiting for a request
            request_channel.receive_request(self._receiver)

    @property
    def idle_handlers(self) -> int:
        return self.request_channel.idle_handlers

    def _handle(self, envelope: RequestEnvelope) -> None:
        """A handler takes ``envelope`` (``KafkaRequestHandler.run`` -> ``KafkaApis.handle``)."""
        if self.stw.paused:
            self.stw.defer(lambda: self._handle(envelope))
            return
        env = self.env
        envelope.dequeue_ms = env.now
        warming = 0.0
        cold = self._cold
        if cold is not None and self.running == 0:
            warming = cold.extra(env.now - self._idle_since)
        self.running += 1
        costs = self.costs
        if envelope.api == API_PRODUCE:
            fixed = self._fixed_produce
            if fixed is not None:
                cost = (fixed[0] + fixed[1] * (envelope.request_bytes / KIB) * self.disk_factor
                        + fixed[2] * envelope.partitions)
            else:
                cost = (costs.request() + costs.append_per_kib() * (envelope.request_bytes / KIB) * self.disk_factor
                        + (costs.per_partition() + costs.append()) * envelope.partitions)
            self._work(cost + warming, partial(self._produce_done, envelope))
            return
        responses = self.apis.handle_fetch(envelope)
        fixed = self._fixed_fetch
        if fixed is not None:
            request = fixed[0]
            read = fixed[1] * (envelope.read_bytes / KIB) + fixed[2] * envelope.read_partitions
        else:
            request = costs.request()
            read = costs.read_per_kib() * (envelope.read_bytes / KIB) + costs.per_partition() * envelope.read_partitions
        if envelope.read_segments:
            read += self._segment_cost(envelope.read_segments)
        if envelope.api == API_FETCH_FOLLOWER and envelope.partitions > 0:
            # Partition.updateFollowerFetchState moves the follower's log end offset (maybeIncrementLeaderHW)
            # only for a partition whose fetch offset moved, and those are the partitions an incremental
            # request names (FetchSessionHandler sends a partition when its fetch offset changed): an idle
            # partition of the session costs only its read (per_partition).
            follower = self._fixed_follower
            read += (follower if follower is not None else costs.follower_fetch()) * envelope.partitions
        disk = self.disk
        cold_read = 0.0
        if disk is not None and disk.page_cache_bytes >= 0:
            cold_read = self._cold_read(disk, envelope, responses)
        mid = False
        for response in responses:
            if response is not envelope:
                mid = True
                break
        if mid:
            # The fetch completed others (a follower's HW advance: Partition.updateFollowerFetchState calls
            # tryCompleteDelayedRequests inside Partition.fetchRecords, right after the read): they are answered
            # when the read is done, and the rest of the handling (the request cost: ReplicaManager.fetchMessages'
            # callback, KafkaApis' processResponseCallback building the response) comes after them.
            cost = read
            done = partial(self._answer, envelope, responses, _RESPOND, request)
        else:
            cost = request + read
            done = partial(self._answer, envelope, responses, _FINISH, 0.0)
        self._work(cost + warming, done, cold_read)

    def _wake(self, _put: RequestEnvelope) -> None:
        """A waiting handler is signalled by a put (``_put``): it runs after its wake-up, and takes the oldest
        request then (``_woken``)."""
        wakeup = self.costs.wakeup
        delay = 0.0 if wakeup is None else max(wakeup(), 0.0)
        load = self.load
        if load is not None:
            delay = load.wait(delay)
        Call(self.env, delay, self._woken)

    def _woken(self, _event: object = None) -> None:
        """ArrayBlockingQueue.poll once the signalled thread runs: the oldest request, or back to waiting when
        handlers that asked before it have taken every one."""
        if self.stw.paused:
            self.stw.defer(self._woken)
            return
        self._poll()

    def _poll(self) -> None:
        """``RequestChannel.receiveRequest``: handle the oldest request, if any, else wait for a put (taking one
        lets a processor blocked in put() go on)."""
        nxt = self.request_channel.receive_request(self._receiver)
        if nxt is not None:
            self._handle(nxt)

    def _on_core(self, asked: float, cost: float, then: Callable[[object], None], event: object) -> None:
        """The handler's CPU work is done: the time it waited for a core counts as busy too (a runnable
        thread is not in ``receiveRequest``: Kafka's idle meter does not count it idle)."""
        self.handler_busy_ms += self.env.now - asked - cost
        then(event)

    def _cold_read(self, disk: Disk, envelope: RequestEnvelope, responses: list[RequestEnvelope]) -> float:
        """How long reading, from the disk, what the fetch's answer holds that the page cache no longer does
        holds the handler (0: all of it in the cache, or the fetch parked)."""
        response = envelope.response
        if response is None or not any(r is envelope for r in responses):
            return 0.0
        cold = 0
        for _tp, result in response.fetch_response().responses:
            cold += disk.cold_bytes(result.info.records)
        if cold == 0:
            return 0.0
        disk.begin()
        disk.read(cold)
        return disk.take_delay()

    # The service time's end: a Call runs these with its event (a partial, not a lambda: one frame fewer).
    def _produce_done(self, envelope: RequestEnvelope, _event: object = None) -> None:
        if self.stw.paused:
            self.stw.defer(lambda: self._produce_done(envelope))
            return
        disk = self.disk
        if disk is None:
            self.apis.handle_produce(envelope)
            self._finish(envelope)
            return
        disk.begin()
        responses = self.apis.handle_produce_held(envelope)
        held = disk.take_delay()
        if held > 0.0:
            self.handler_busy_ms += held
            Call(self.env, held, partial(self._answer, envelope, responses, _FINISH, 0.0))
        else:
            self._answer(envelope, responses, _FINISH, 0.0)

    def _answer(self, envelope: RequestEnvelope, responses: list[RequestEnvelope], then: int, request: float,
                _event: object = None) -> None:
        """The handling's work is done: ``responses`` go out (``_send_all``), then ``then``. A fetch that completed
        others has only read (and moved its follower's state) when it comes here with _RESPOND: they are answered
        first, and the rest of its handling, ``request`` ms, comes before its own response."""
        if self.stw.paused:
            self.stw.defer(lambda: self._answer(envelope, responses, then, request))
            return
        self._send_all(envelope, responses, 0, then, request)

    def _send_all(self, envelope: RequestEnvelope, responses: list[RequestEnvelope], start: int, then: int,
                  request: float) -> None:
        """Send ``responses[start:]`` in order; a parked request that ``envelope``'s handling completed (another
        request's DelayedFetch or DelayedProduce) holds the handler for its completion first
        (``_completion_cost``). When all are sent: the action queue (``then`` _FINISH), the request's end (_END:
        the queue ran), or (_RESPOND) the rest of a fetch's handling, ``request`` ms, and its own response (held
        back here) after it."""
        send_response = self.request_channel.send_response
        for i in range(start, len(responses)):
            response = responses[i]
            if response is envelope:
                if then == _RESPOND:
                    continue
            else:
                cost = self._completion_cost(response)
                if cost > 0.0:
                    if self._yields and envelope.request_id not in self._woke:
                        # It yields to the first idle network thread its handling's responses woke, a produce's or a
                        # completed fetch's, and to no later one (kafkasim.sim.machine_load has the request logs'
                        # figures: the second of two follower fetches an acks=1 produce completed came one
                        # completion after the first, an acks=all produce's about a woken thread's wait and send).
                        sent = responses[i - 1] if i > 0 else envelope
                        if self._yielded(envelope, sent, partial(self._send_all, envelope, responses, i, then, request)):
                            return
                    self._work(cost, partial(self._completed, envelope, responses, i, then, request))
                    return
            send_response(response)
        if then == _END:
            self._end(envelope)
        elif then == _RESPOND:
            own = [envelope] if any(r is envelope for r in responses) else []
            self._work(request, partial(self._answer, envelope, own, _FINISH, 0.0))
        else:
            self._finish(envelope)

    def _completed(self, envelope: RequestEnvelope, responses: list[RequestEnvelope], i: int, then: int,
                   request: float, _event: object = None) -> None:
        """The handler has completed ``responses[i]``: it goes out, then the rest."""
        if self.stw.paused:
            self.stw.defer(lambda: self._completed(envelope, responses, i, then, request))
            return
        self.request_channel.send_response(responses[i])
        self._send_all(envelope, responses, i + 1, then, request)

    def _completion_cost(self, response: RequestEnvelope) -> float:
        """The handler time of completing a parked fetch: ``DelayedFetch.onComplete`` reads its partitions
        (``ReplicaManager.readFromLog``, the same read as a fetch answered at once) and ``KafkaApis``' callback
        builds and sends its response, on the thread of the request that completed it. A parked produce (no
        read: ``read_bytes`` 0; most often completed by a follower fetch's HW advance) costs ``complete_fetch``
        alone: ``DelayedProduce.onComplete`` runs its response callback (``KafkaApis.handleProduceRequest``'s
        ``sendResponseCallback``, ``RequestChannel.sendResponse``) there too. It cost nothing until 2026-12-05;
        at acks=all the real cluster's follower fetches then took longer than kafkasim's (LocalTimeMs p50 0.27 ms
        against 0.16; docs/calibration.md)."""
        fixed = self._fixed_complete
        if fixed is not None:
            cost = fixed[0] + fixed[1] * (response.read_bytes / KIB) + fixed[2] * response.read_partitions
        else:
            costs = self.costs
            cost = (costs.complete_fetch() + costs.read_per_kib() * (response.read_bytes / KIB)
                    + costs.per_partition() * response.read_partitions)
        if response.read_segments:
            cost += self._segment_cost(response.read_segments)
        return cost

    def _segment_cost(self, segments: int) -> float:
        """The handler time of finding the fetch offset in ``segments`` partitions' logs (``LocalLog.read``):
        one ``segment_read`` each, for a fetch answered at once and a parked fetch completed alike."""
        segment = self._fixed_segment
        return (segment if segment is not None else self.costs.segment_read()) * segments

    def _yielded(self, envelope: RequestEnvelope, sent: RequestEnvelope, then: Callable[[], None]) -> bool:
        """Whether the handler of ``envelope`` gives its core to the network thread that ``sent``'s response woke,
        until it has sent it (MachineLoad.waker_yields: Linux's wake-up preemption on a machine of busy cores);
        ``then`` runs then (Processor.after_sent). Or, for a share of them (MachineLoad.waits_share), that thread
        waits for this handler instead: the handler goes on, and releases it when it goes back to its queue."""
        channel = sent.connection
        if channel is None:
            return False
        processor = self.request_channel.processors[channel.processor]
        if processor.holds_waker(sent):
            self._holding.append((envelope, processor))
            self._woke.add(envelope.request_id)
            return False
        if processor.after_sent(sent, then):
            self._woke.add(envelope.request_id)
            return True
        return False

    def _release(self, envelope: RequestEnvelope) -> None:
        """The network threads that waited for the handler of ``envelope`` to go back to its queue run now."""
        holding = self._holding
        kept: list[tuple[RequestEnvelope, Processor]] = []
        released: list[Processor] = []
        for held in holding:
            if held[0] is envelope:
                released.append(held[1])
            else:
                kept.append(held)
        self._holding = kept
        for processor in released:
            processor.release()

    def _work(self, cost: float, then: Callable[[object], None], off_cpu: float = 0.0) -> None:
        """The handler works ``cost`` ms (on a core of the host's, if it models them), waits ``off_cpu`` ms off
        its core (a disk read), then ``then``. On a machine whose cores other threads share
        (``machine_preemption``) the work is interrupted now and then: the thread waits for a core meanwhile
        (kafkasim.sim.preemption), as busy as when it works (Kafka's idle meter counts only ``receiveRequest``)."""
        preemption = self._preemption
        if preemption is not None:
            off_cpu += preemption.waits(cost)
        self.handler_busy_ms += cost + off_cpu
        self.meter.handlers_ms += cost
        hold(self.env, self.cpu, cost, off_cpu, then, self._on_core)

    def _finish(self, envelope: RequestEnvelope) -> None:
        # KafkaApis.handle's finally: ReplicaManager.tryCompleteActions. The parked fetches it completes (a
        # produce's followers and consumers, woken by its append) are read and answered on this thread, one
        # after another, before apiLocalCompleteTimeNanos is set: an acks=all produce's LocalTimeMs includes
        # them (an acks=1 produce's was set when its response was sent).
        self._send_all(envelope, self.apis.try_complete_actions_held(), 0, _END, 0.0)

    def _end(self, envelope: RequestEnvelope) -> None:
        if not envelope.locally_completed:  # no response sent before (RequestChannel.sendResponse marks it then)
            envelope.locally_completed = True
            envelope.local_complete_ms = self.env.now
        self.requests_handled += 1
        self.running -= 1
        if self._woke:
            self._woke.discard(envelope.request_id)
        if self.running == 0:
            self._idle_since = self.env.now
        if self._holding:
            self._release(envelope)
        if self._checks:
            self._observer.request_handled(envelope)
        for reaper in self._reapers:
            reaper.poke()
        self._poll()  # the next request
