"""Kafka's ``SocketServer``: the network threads (``SocketServer.Processor``) and their connections
(``KafkaChannel``), as event-driven state machines on the SimPy clock (one heap event per read or send,
no generator processes on the hot path).

* Every connection belongs to one of ``num.network.threads`` processors, assigned round robin
  (``Acceptor.assignNewConnection``). Kafka's round robin runs over every connection the broker accepts (admin
  clients', the clients' bootstrap and metadata connections, in whatever order they and the followers' fetchers
  came), which a scenario does not model: with an ``acceptor_rng`` (the scenario's `connection_layout:
  random`) each connection's processor is drawn from it instead, as if any number of those came before it.
  With a ``fetcher`` test too (`connection_layout: groups`), the followers' fetchers' connections and the
  clients' each go round robin, from a processor drawn for each group's first: the fetchers connect one after
  another as the brokers start, the clients once they have their metadata, and the connections nobody models
  (an admin client's, the clients' bootstrap and metadata ones) come before or between the groups.
* A processor is a serial server running Kafka's loop (``Processor.run``), one iteration at a time: it takes
  every queued response (``processNewResponses``), writes them and reads the connections with a request ready
  (``poll``: cost ``network_read`` + per KiB each), stamps each request's ``startTimeNanos`` and puts it into
  the ``RequestChannel`` (``processCompletedReceives``, kafkasim.network.request_channel; when the request queue
  is full the processor blocks in ``put`` until a handler takes a request), then completes each response written
  (``processCompletedSends``). Responses queued meanwhile wait for the next iteration.
* Reading a request *mutes* its connection (``Selector.mute``): the next request of that connection waits
  in the socket until this one's response has been sent, so a producer with 5 requests in flight is
  served one at a time.
* A client's close leaves what it sent before it readable, until the first response that must be written
  on the closed connection (``SocketServer.close_channel``).
* A response put on the processor's response queue (``Processor.enqueueResponse``) is taken
  (``responseDequeueTimeNanos``), written (``network_send`` + per KiB) and handed to the connection's link;
  once the iteration's writes and reads are done, ``processCompletedSends`` takes its ``endTimeNanos``
  (``updateRequestMetrics``), does the thread's work after a send (``network_complete``: with
  ``kafka.request.logger`` at DEBUG, the request log's line) and unmutes the connection (``tryUnmuteChannel``),
  then the next response's. So a response's ResponseSendTimeMs includes the writes after it in the iteration,
  the reads of that poll and the completions before its own. acks=0 produces get a ``NoOpResponse``: dequeued,
  no send cost, the same ``network_complete`` (``processNewResponses`` runs ``updateRequestMetrics`` for it),
  connection unmuted, nothing travels back.

Simplification: the processors' read, send and complete costs are their only CPU modelled. With the host's cores
modelled (``cpu``, kafkasim.sim.host_cpu), a read or a send first waits for a core.

A stop-the-world pause of the broker (``stw``, a ``Pausable`` shared with its request handlers and
reapers) stops the processors: a request arriving meanwhile stays in its socket, a response in its
queue, and a read or send in progress completes only when the pause ends.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Final

from kafkasim.network.kafka_channel import KafkaChannel
from kafkasim.network.messages import RequestEnvelope
from kafkasim.network.observer import Observer
from kafkasim.network.request_channel import RequestChannel
from kafkasim.sim.calls import Call, Pausable
from kafkasim.sim.cold_start import PoolClock
from kafkasim.sim.cpu_meter import CpuMeter
from kafkasim.sim.distributions import constant_value
from kafkasim.sim.host_cpu import HostCpu, hold
from kafkasim.sim.machine_load import MachineLoad
from kafkasim.sim.preemption import Preemption

if TYPE_CHECKING:
    from simpy import Environment

Sampler = Callable[[], float]
KIB: Final = 1024.0
# The steps of one iteration of Processor.run's loop (Processor.run).
IDLE: Final = 0
NEW_RESPONSES: Final = 1
WRITES: Final = 2
READS: Final = 3
COMPLETED_SENDS: Final = 4


@dataclass(frozen=True, slots=True)
class ProcessorCosts:
    """A processor's service-time samplers (zero-argument callables returning ms), from the scenario.

    A per-KiB cost is drawn once per request and multiplied by the size in KiB.
    """

    network_read: Sampler
    network_read_per_kib: Sampler
    network_send: Sampler
    network_send_per_kib: Sampler
    # How long a network thread takes to run again once woken (the host's scheduling latency); None: at once.
    wakeup: Sampler | None = None
    # The machine's interruptions of a read's or a send's work (machine_preemption, kafkasim.sim.preemption).
    preemption: Preemption | None = None
    # The thread's work once a response is written (Processor.processCompletedSends) or a NoOpResponse dequeued
    # (Processor.processNewResponses), before it unmutes the connection and goes on; None: none.
    network_complete: Sampler | None = None

    def fixed_read(self) -> tuple[float, float] | None:
        """(network_read, network_read_per_kib) if both are constants (read once, not drawn per request)."""
        return _both_constant(self.network_read, self.network_read_per_kib)

    def fixed_send(self) -> tuple[float, float] | None:
        """(network_send, network_send_per_kib) if both are constants."""
        return _both_constant(self.network_send, self.network_send_per_kib)


def _both_constant(base: Sampler, per_kib: Sampler) -> tuple[float, float] | None:
    fixed_base, fixed_per_kib = constant_value(base), constant_value(per_kib)
    return None if fixed_base is None or fixed_per_kib is None else (fixed_base, fixed_per_kib)


class Processor:
    """One network thread (``SocketServer.Processor``): its response queue, the connections with a request
    ready, its busy state."""

    __slots__ = (
        "index", "env", "request_channel", "costs", "observer", "busy", "blocked", "responses", "readable",
        "busy_ms", "meter", "broker_id", "stw", "cpu", "_fixed_read", "_fixed_send", "_wakeup", "waking", "load",
        "woken_for", "woken_yields", "yielded", "held", "ready", "_preemption", "_complete", "phase", "writes", "written", "to_read",
        "_cold", "_pool_clock",
    )

    def __init__(
        self, index: int, env: Environment, request_channel: RequestChannel, costs: ProcessorCosts, observer: Observer,
        broker_id: int = 0, stw: Pausable | None = None, cpu: HostCpu | None = None,
        load: MachineLoad | None = None, pool_clock: PoolClock | None = None,
    ) -> None:
        self.index = index
        # The machine's running threads when the brokers share one (kafkasim.sim.machine_load): a woken network
        # thread waits longer for each.
        self.load = load
        # A read or send started after the broker's network threads have been without work costs more
        # (machine_cold_start, kafkasim.sim.cold_start): idle from when the last read or send of any of them was due
        # to end (its wait for a core of `cpu` or within its work aside). The SocketServer shares one clock.
        self._cold = load.cold if load is not None else None
        self._pool_clock = pool_clock if pool_clock is not None else PoolClock()
        # The host's cores when the scenario sets `cores`: a read or a send waits for a core.
        self.cpu = cpu
        self.broker_id = broker_id
        self.stw = stw if stw is not None else Pausable()
        self.env = env
        self.request_channel = request_channel
        self.costs = costs
        # Constant costs (the default) are read here once: no sampler call per read or send.
        self._fixed_read = costs.fixed_read()
        self._fixed_send = costs.fixed_send()
        self._wakeup = costs.wakeup
        self._preemption = costs.preemption
        self._complete = costs.network_complete
        self.observer = observer
        self.busy = False
        # Busy only waiting to run after a wake-up: not one of the machine's running threads.
        self.waking = False
        # With the machine's waker yielding (MachineLoad.waker_yields): the response whose queueing woke this
        # thread, and what the handler that queued it does once it is sent (it yielded its core meanwhile).
        self.woken_for: RequestEnvelope | None = None
        # Whether its waker yields (else it may only hold this thread: MachineLoad.waits_share).
        self.woken_yields = False
        # Every handler that yielded to it goes on: a produce's handler that queued a parked fetch's response, and
        # that fetch's own handler still at work, can both wait for the same send.
        self.yielded: list[Callable[[], None]] = []
        # With MachineLoad.waits_share: woken on the core of the handler that queued the response, which keeps it
        # until it goes back to its queue (release); `ready` once its wake-up is over meanwhile.
        self.held = False
        self.ready = False
        # A request that could not be put into the full request queue (the processor waits in put()).
        self.blocked: RequestEnvelope | None = None
        self.responses: deque[RequestEnvelope] = deque()
        self.readable: deque[KafkaChannel] = deque()
        self.busy_ms = 0.0
        self.meter = CpuMeter()  # the broker's (BrokerServer), kept across its restarts
        # Where the thread is in Processor.run's loop (run): IDLE in Selector.poll, else the step under way.
        self.phase = IDLE
        # The responses this iteration took and has still to write, and those written and still to complete.
        self.writes: deque[RequestEnvelope] = deque()
        self.written: deque[RequestEnvelope] = deque()
        # How many of the connections in `readable` this iteration's poll reads: those ready when it began.
        self.to_read = 0

    def enqueue_response(self, envelope: RequestEnvelope) -> None:
        """``Processor.enqueueResponse`` (called by ``RequestChannel.sendResponse``), then ``wakeup``."""
        if self.stw.paused:
            self.stw.defer(partial(self.enqueue_response, envelope))
            return
        self.responses.append(envelope)
        if not self.busy and self.blocked is None and self.phase == IDLE:
            load = self.load
            if load is not None:
                yields = load.yields_now()
                if yields or load.waits_share > 0.0:
                    self.woken_for = envelope
                    self.woken_yields = yields
            self.wake()

    def wake(self) -> None:
        """``Processor.wakeup``: the thread, idle in ``Selector.poll``, runs again -- at once, or after the
        host's scheduling latency (``costs.wakeup``: a woken thread waits for a core before it runs). Busy while
        waking: a second wake-up meanwhile is the same one."""
        wakeup = self._wakeup
        load = self.load
        if wakeup is None and load is None:
            self.run()
            return
        delay = 0.0 if wakeup is None else max(wakeup(), 0.0)
        if load is not None:
            delay += load.delay()  # with the machine's load: longer for each thread running then (MachineLoad)
        self.busy = True
        self.waking = True
        Call(self.env, delay, self._woken)

    def _woken(self, _event: object = None) -> None:
        if self.stw.paused:
            self.stw.defer(self._woken)
            return
        if self.held:
            self.ready = True  # still waiting for its core: the handler that woke it holds it (release)
            return
        self.busy = False
        self.waking = False
        if self.blocked is None:
            self.run()

    def release(self) -> None:
        """The handler that held this thread's core went back to its queue (MachineLoad.waits_share): the thread
        runs after a wake-up counted from now, or, its first wake-up still under way, when that is over."""
        self.held = False
        if self.ready:
            self.ready = False
            self.busy = False
            self.waking = False
            self.wake()

    def resume(self) -> None:
        """The put() this processor was blocked in completed (a handler took a request)."""
        self.run()

    def run(self) -> None:
        """Go on with ``Processor.run``'s loop: an iteration under way from where it stopped (a write, a read or a
        completion done, a blocked put() completed), else a new one if there is work, else the thread waits in
        ``Selector.poll``.

        One iteration is Kafka's: ``processNewResponses`` takes every queued response, stamping each one's
        ``responseDequeueTimeNanos`` as it takes it (a ``NoOpResponse`` is completed there and then);
        ``poll`` writes the responses taken (``network_send`` each, its bytes handed to the connection's link
        as it is written) and reads the connections with a request ready; ``processCompletedReceives`` puts each
        request read into the RequestChannel (``startTimeNanos``); ``processCompletedSends`` completes each
        response written, in turn: ``updateRequestMetrics`` takes ``endTimeNanos`` and with the request log on
        writes its line (``network_complete``), then ``tryUnmuteChannel``. So a response's ResponseSendTimeMs
        runs on through the writes after it, the requests read in the same poll and the completions before it:
        on the project's machine a follower whose connection shared a network thread with the producer's took a
        median 0.18-0.21 ms from dequeue to end, the other follower 0.12-0.14, in three real runs of
        scenarios/calibration_base.yaml; 0.09-0.11 each in the two runs where the producer had a network thread
        of its own (``Acceptor`` assigns connections round robin, whoever else connected first).
        A response queued meanwhile waits for the next iteration."""
        env = self.env
        phase = self.phase
        if phase == IDLE:
            if not self.responses and not self.readable:
                self.busy = False
                return  # Selector.poll: until a response is queued or a request arrives (wake)
            phase = self.phase = NEW_RESPONSES
            self.busy = True
        if phase == NEW_RESPONSES:
            responses = self.responses
            while responses:
                envelope = responses.popleft()
                envelope.response_dequeue_ms = env.now
                if envelope.expects_response:
                    self.writes.append(envelope)
                    continue
                # NoOpResponse (acks=0): nothing to write; processNewResponses runs updateRequestMetrics
                # (network_complete) and unmutes.
                if self._update_request_metrics(envelope):
                    return
            # Selector.poll selects the connections ready now: a request arriving during its writes and reads
            # is read in the next iteration.
            self.to_read = len(self.readable)
            phase = self.phase = WRITES
        if phase == WRITES:
            if self.writes:
                envelope = self.writes.popleft()
                response = envelope.response
                assert response is not None  # KafkaApis built it before RequestChannel.sendResponse
                fixed = self._fixed_send
                costs = self.costs
                if fixed is not None:
                    cost = fixed[0] + fixed[1] * (response.size_in_bytes / KIB)
                else:
                    cost = costs.network_send() + costs.network_send_per_kib() * (response.size_in_bytes / KIB)
                self._work(cost, partial(self._written, envelope))
                return
            phase = self.phase = READS
        if phase == READS:
            readable = self.readable
            while self.to_read > 0:
                self.to_read -= 1
                channel = readable.popleft()
                channel.readable = False
                if channel.muted or not channel.pending or channel.closed:
                    continue
                envelope = channel.pending.popleft()
                channel.muted = True
                envelope.connection = channel
                envelope.broker = self.broker_id  # the broker that handles it (the requests table's `broker`)
                fixed = self._fixed_read
                if fixed is not None:
                    cost = fixed[0] + fixed[1] * (envelope.request_bytes / KIB)
                else:
                    costs = self.costs
                    cost = costs.network_read() + costs.network_read_per_kib() * (envelope.request_bytes / KIB)
                self._work(cost, partial(self._read_done, envelope))
                return
            phase = self.phase = COMPLETED_SENDS
        written = self.written
        while written:
            if self._update_request_metrics(written.popleft()):
                return
        self.phase = IDLE
        self.run()  # the next iteration, if there is work

    def _update_request_metrics(self, envelope: RequestEnvelope) -> bool:
        """``updateRequestMetrics`` for ``envelope``'s response (a NoOpResponse's in processNewResponses, a written
        one's in processCompletedSends): its ``endTimeNanos`` now, then the thread's work on it
        (``network_complete``) and its connection unmuted. True if that work is under way (``_send_completed``
        goes on with the iteration)."""
        envelope.end_ms = self.env.now
        envelope.response_sent = True
        channel = envelope.connection
        assert channel is not None
        if self._completing(envelope, channel):
            return True
        self._responded(envelope, channel)
        return False

    def _work(self, cost: float, then: Callable[[object], None]) -> None:
        """The thread reads or sends for ``cost`` ms (on a core of the host's, if it models them), then ``then``.
        On a machine whose cores other threads share (``machine_preemption``) it waits for a core now and then
        meanwhile (kafkasim.sim.preemption): busy all the same (not in ``Selector.poll``)."""
        self.busy = True
        cold = self._cold
        if cold is not None:
            cost += self._pool_clock.start(cold, self.env.now, cost)
        preemption = self._preemption
        wait = 0.0 if preemption is None else preemption.waits(cost)
        self.busy_ms += cost + wait
        self.meter.network_ms += cost
        hold(self.env, self.cpu, cost, wait, then, self._on_core)

    def _on_core(self, asked: float, cost: float, then: Callable[[object], None], event: object) -> None:
        """The read's or send's CPU work is done: the time it waited for a core counts as busy too (a runnable
        network thread is not in ``Selector.poll``, which Kafka's idle meter times)."""
        self.busy_ms += self.env.now - asked - cost
        then(event)

    def _read_done(self, envelope: RequestEnvelope, _event: object) -> None:
        if self.stw.paused:
            self.stw.defer(partial(self._read_done, envelope, _event))
            return
        # Not one of the machine's running threads while it hands the request over (kafkasim.sim.machine_load): the
        # handler it wakes finds it done, as on the real brokers, where a consumer's fetch mostly arrives when no
        # broker thread runs. Still in its iteration (phase): nothing wakes it meanwhile.
        self.busy = False
        envelope.start_ms = self.env.now
        # ArrayBlockingQueue.put blocks the thread when the queue is full: back-pressure on every connection
        # this processor owns, until RequestChannel.receive_request resumes it (and so this iteration).
        if self.request_channel.send_request(self, envelope):
            self.run()

    def _written(self, envelope: RequestEnvelope, _event: object = None) -> None:
        """``envelope``'s response is written: its bytes go to the connection's link. The thread completes it
        (``processCompletedSends``) once the iteration's writes and reads are done."""
        if self.stw.paused:
            self.stw.defer(partial(self._written, envelope))
            return
        channel = envelope.connection
        assert channel is not None
        if channel.closing:
            # Selector.send to a channel its peer closed fails: the channel is closed for good, what it still
            # had unread is dropped (SocketServer.close_channel).
            channel.closing = False
            channel.closed = True
            channel.pending.clear()
        elif not channel.closed:
            channel.send_response(envelope)
        self.written.append(envelope)
        # The handlers that yielded their cores to this thread go on now that the response is out (busy
        # meanwhile: a response they queue waits): on the project's machine the first parked follower fetch an
        # acks=1 produce completed was answered 0.22-0.33 ms after the produce's response (the medians of three
        # runs), 0.41 ms in a fitted run whose handlers waited for the thread's work after the write too.
        self._go_on(envelope)
        self.run()

    def _completing(self, envelope: RequestEnvelope, channel: KafkaChannel) -> bool:
        """Whether the thread has work to do once ``envelope``'s response is out (``network_complete``, drawn
        once per response): if so it starts it, and ``_send_completed`` unmutes ``channel`` and goes on."""
        complete = self._complete
        if complete is None:
            return False
        cost = complete()
        if cost <= 0.0:
            return False
        self._work(cost, partial(self._send_completed, envelope, channel))
        self._go_on(envelope)  # a NoOpResponse the thread was woken for is out now
        return True

    def _send_completed(self, envelope: RequestEnvelope, channel: KafkaChannel, _event: object = None) -> None:
        """``updateRequestMetrics`` is done with ``envelope``'s response (``network_complete``: with
        ``kafka.request.logger`` at DEBUG, the request log's line), then the connection (``channel``: a request
        done on both sides meanwhile has had its row written, which drops the envelope's,
        kafkasim.record.run_recorder) is unmuted and the thread goes on."""
        if self.stw.paused:
            self.stw.defer(partial(self._send_completed, envelope, channel))
            return
        self._responded(envelope, channel)
        self.run()

    def _responded(self, envelope: RequestEnvelope, channel: KafkaChannel) -> None:
        """``envelope``'s response is out (written, or a NoOpResponse): its connection (``channel``) reads again,
        and if it is the response this thread was woken for, the handlers that yielded their cores to it go on, in
        the order they yielded."""
        self._unmute(channel)
        self.observer.response_done(envelope)
        self._go_on(envelope)

    def _go_on(self, envelope: RequestEnvelope) -> None:
        """If ``envelope``'s is the response this thread was woken for, the handlers that yielded their cores to it
        go on, in the order they yielded."""
        if envelope is self.woken_for:
            self.woken_for = None
            waiting = self.yielded
            if waiting:
                self.yielded = []
                for then in waiting:
                    then()

    def holds_waker(self, envelope: RequestEnvelope) -> bool:
        """Whether this thread, woken for ``envelope``'s response and not yet run, waits for the handler that
        queued it to go back to its queue instead of taking its core (MachineLoad.waits_share: drawn here): the
        handler then goes on, and ``release``s it at its end. Not when the thread was already awake."""
        load = self.load
        if load is None or self.woken_for is not envelope or envelope.response_sent or not self.waking:
            return False
        if not load.waits_for_waker():
            return False
        self.woken_for = None
        self.held = True
        return True

    def after_sent(self, envelope: RequestEnvelope, then: Callable[[], None]) -> bool:
        """Whether this thread was woken for ``envelope``'s response and has not sent it yet; if so, ``then`` runs
        once it has (MachineLoad.waker_yields: the handler that queued it yields its core meanwhile). Not when
        the thread was already awake: the response was queued behind others."""
        if self.woken_for is not envelope or envelope.response_sent or not self.woken_yields:
            return False
        self.yielded.append(then)
        return True

    def _unmute(self, channel: KafkaChannel) -> None:
        channel.muted = False
        if channel.pending and not channel.readable and not channel.closed:
            channel.readable = True
            self.readable.append(channel)  # the channel is this processor's
        # The caller (the channel's processor) picks the next work up.


def _finished(channel: KafkaChannel) -> bool:
    """Closed, or closed by its client with nothing left to read or answer: a crash has nothing to reset on
    it (a request it may still receive from a paused broker's socket is read as ever)."""
    return channel.closed or (channel.closing and not channel.muted and not channel.pending)


class SocketServer:
    """``num.network.threads`` processors of broker ``broker_id`` feeding one ``RequestChannel``; connections
    come and go here."""

    def __init__(
        self,
        env: Environment,
        request_channel: RequestChannel,
        costs: ProcessorCosts,
        *,
        num_network_threads: int = 3,
        observer: Observer,
        broker_id: int = 0,
        stw: Pausable | None = None,
        cpu: HostCpu | None = None,
        load: MachineLoad | None = None,
        acceptor_rng: random.Random | None = None,
        fetcher: Callable[[str], bool] | None = None,
    ) -> None:
        self.env = env
        self.broker_id = broker_id
        self.stw = stw if stw is not None else Pausable()
        self.request_channel = request_channel
        self._acceptor_rng = acceptor_rng
        # With `fetcher` (the scenario's `connection_layout: groups`), whether a connection is a follower's
        # fetcher: the fetchers' connections and the clients' each go round robin from a thread drawn from
        # `acceptor_rng` for the group's first one (-1: not drawn yet).
        self._fetcher = fetcher
        self._group_next = [-1, -1]
        clock = PoolClock()  # the network threads' one idle time (machine_cold_start)
        self.processors = [Processor(i, env, request_channel, costs, observer, broker_id, self.stw, cpu, load, clock)
                           for i in range(num_network_threads)]
        for processor in self.processors:
            request_channel.add_processor(processor)
        self._next_processor = 0
        # Open connections (reset when the broker crashes), and whether the process is gone.
        self.channels: list[KafkaChannel] = []
        self.down = False

    def running_threads(self) -> int:
        """Network threads reading a request or sending a response now (not those waiting to run after a
        wake-up): what this broker's processors add to the machine's running threads (MachineLoad)."""
        running = 0
        for processor in self.processors:
            if processor.busy and not processor.waking:
                running += 1
        return running

    def connect(self, name: str, send_response: Callable[[RequestEnvelope], None]) -> KafkaChannel:
        """Accept a connection; ``send_response(envelope)`` puts a sent response on the link back."""
        rng = self._acceptor_rng
        fetcher = self._fetcher
        if rng is None:
            index = self._next_processor
            self._next_processor = (index + 1) % len(self.processors)
        elif fetcher is not None:
            group = 0 if fetcher(name) else 1
            index = self._group_next[group]
            if index < 0:
                index = rng.randrange(len(self.processors))
            self._group_next[group] = (index + 1) % len(self.processors)
        else:
            index = rng.randrange(len(self.processors))
        channel = KafkaChannel(name, index, send_response)
        if self.down:
            channel.closed = True  # nothing listens: the client's connection attempt is refused
        else:
            if len(self.channels) > 64 and _finished(self.channels[0]):
                self.channels = [c for c in self.channels if not _finished(c)]
            self.channels.append(channel)
        return channel

    def crash(self) -> None:
        """The broker process died: the kernel resets every open connection (each client hears of it one
        link latency later, ``KafkaChannel.on_reset``); unread requests are lost; new connections are refused."""
        self.down = True
        channels, self.channels = self.channels, []
        for channel in channels:
            if channel.closed:
                continue
            channel.closed = True
            channel.pending.clear()
            if channel.closing:  # the client had closed it: nobody hears the reset
                channel.closing = False
                continue
            if channel.on_reset is not None:
                channel.on_reset()

    def receive(self, channel: KafkaChannel, envelope: RequestEnvelope) -> None:
        """A request fully arrived on ``channel``'s socket."""
        if channel.closed:
            return
        if self.stw.paused:  # read (and its arrival noticed) when the broker's pause ends
            self.stw.defer(partial(self.receive, channel, envelope))
            return
        channel.pending.append(envelope)
        if not channel.muted and not channel.readable:
            channel.readable = True
            processor = self.processors[channel.processor]
            processor.readable.append(channel)
            if not processor.busy and processor.blocked is None and processor.phase == IDLE:  # Processor.wakeup
                processor.wake()

    def reset_channel(self, channel: KafkaChannel) -> None:
        """The connection was reset (an RST: a ``connection_reset`` fault): the channel is closed for good at
        once. What it had unread is dropped and a response still to be written is discarded (a closed
        channel's responses are not sent, as ``Processor`` drops those of a closed connection); requests already
        in the request queue or purgatory are handled anyway."""
        channel.closed = True
        channel.closing = False
        channel.pending.clear()

    def close_channel(self, channel: KafkaChannel) -> None:
        """The client closed the connection (its request timeout, a disconnect, its process exiting).

        What it sent before closing is in the broker's socket ahead of the FIN, and Kafka's broker still reads
        it: ``Selector.close`` keeps a channel its peer closed in ``closingChannels`` while it has receives
        to process, one request at a time as ever (the channel stays muted while one is in process). The first
        response that must then be written fails (``Selector.send`` to a closing channel: ``failedSends``):
        the channel is closed for good and what it still had unread is dropped. So the request in process
        when the client closed, or else the next one read, is handled and its response discarded; a
        request without a response (acks=0: ``NoOpResponse``) writes nothing, and every such request sent
        before the close is handled. Requests already in the request queue or purgatory are handled anyway,
        as in Kafka, whose handlers do not notice a closed connection.

        Simplification: the broker learns of the close only by the failed write (Kafka may also see the FIN
        by a read of an idle channel, which then closes at once: nothing was unread, the same outcome).
        """
        if not channel.closed:
            channel.closing = True
