"""A host's network interface: one bandwidth per direction, shared by every connection of the host.

Each broker host has one NIC. Everything the host receives -- producer requests, followers' fetch requests
to its leaders, its own fetchers' responses -- crosses its ``inbound`` direction; everything it sends --
produce responses, replication data to followers, consumer fetch responses, its fetchers' requests -- its
``outbound`` direction. All the host's connections together never exceed a direction's bandwidth.

How a direction shares its bandwidth among concurrent messages is its discipline (``cluster.nic.sharing``):

* ``fair`` (the default): a real NIC does not send whole messages one after the other; it sends packets,
  and with several connections busy their packets interleave (the kernel's per-flow queues, ``fq``, serve
  the flows round robin one quantum at a time, and TCP shares a bottleneck among its flows). Modelled as
  per-connection processor sharing, the limit of that round robin as the quantum shrinks: the messages at
  the head of every busy connection share the bandwidth equally, and a connection's next message starts
  when its previous one is done (in order within a connection, as TCP is). A 120-byte produce response
  sent while a 1 MB fetch response is half sent takes ``2 x 120 B / bandwidth``, not the rest of the
  fetch response. A connection is one ``NetworkLink`` (the sending or receiving side of one path).
* ``fifo``: one whole message at a time, first come first served, for ``size / bandwidth`` ms (like a
  ``NetworkLink``'s own bandwidth): each message reserves a slot ``[start, start + size / bandwidth]``,
  slots never overlap, and a message's slot starts no earlier than its first byte can reach the NIC. The
  inbound direction is served in the order messages' last bytes arrive, the outbound in the order they are
  sent. A small message waits behind a large one for all of its transmission (head-of-line blocking).

The NIC composes with the links (``NetworkLink(egress=..., ingress=...)``): a message leaves its sender
through the sender host's outbound direction and its connection's link, travels the link's latency, and
enters the receiver through the receiver host's inbound direction. The stages are pipelined, as packets
are: a message is done with a stage no sooner than its own transmit time there and no sooner than its last
byte reached that stage, so a lone message on an idle path pays its serialisation once, at the slowest
stage. With NICs at least as fast as the link, zero-load latency is exactly the link's, under both
disciplines.

Fair sharing, how (``NicDirection.submit``, ``register``, ``arrive``): a direction keeps its busy
connections' head messages with virtual finish tags (GPS: virtual time advances at ``bandwidth / busy
connections`` bytes per ms; a message whose tag the virtual time reaches is done), so a message joining
or leaving costs a heap operation, whatever the number of messages sharing. The outbound direction's
messages start at once and their completions drive the links (one pending event per direction, the next
completion; one superseded by a later arrival is skipped by its generation). The inbound direction is
lazy: a message joins it when its first byte arrives (known in advance, so the past is never rewritten),
and the direction is only brought up to date when a message's last byte arrives (the link's own delivery
event): one already received is delivered at once, and only a message still being received then (the
NIC is the bottleneck) needs an event for its completion.

Simplifications (README): the sharing is fluid (no packet or quantum granularity, no per-packet
overhead); every busy connection gets an equal share (no TCP congestion control or its RTT unfairness);
a message's bytes occupy each stage at that stage's share, independently (a connection limited elsewhere,
e.g. by a slower link or the other host's NIC, still takes its full share of this NIC while it is here);
and on the inbound side a message competes from the time its first byte arrives, whatever the rate its
bytes arrive at (as ``fifo``'s slot starts then too).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from heapq import heappop, heappush
from typing import Final

from simpy import Environment

from kafkasim.sim.calls import Delivery

FIFO: Final = "fifo"
FAIR: Final = "fair"
DISCIPLINES: Final = (FAIR, FIFO)

_TOLERANCE_MS: Final = 1e-9  # a completion due within this of now is done now (float rounding of the tags)


class NicJob:
    """One message crossing one NIC direction under ``fair`` sharing.

    ``flow`` is its connection's queue; ``on_start(job, t)`` (outbound) runs when the message reaches the
    head of its connection, ``on_done(job, t)`` when its last byte has gone through. Fields the link uses
    for its own stage ride along (``latency_ms``, ``link_start_ms``, ``dropped``, ``deliver``, ``peer``)."""

    __slots__ = ("flow", "size_bytes", "seq", "finish", "done", "waiting", "on_start", "on_done",
                 "latency_ms", "link_start_ms", "dropped", "deliver", "peer")

    def __init__(self, flow: NicFlow, size_bytes: int, deliver: Callable[[], None]) -> None:
        self.flow = flow
        self.size_bytes = size_bytes
        self.seq = 0
        self.finish = 0.0
        """Virtual finish tag, set when the message reaches the head of its connection."""
        self.done = False
        self.waiting = False
        """Inbound: its last byte has arrived and its delivery waits for the NIC."""
        self.on_start: Callable[[NicJob, float], None] | None = None
        self.on_done: Callable[[NicJob, float], None] | None = None
        self.latency_ms = 0.0
        self.link_start_ms = 0.0
        self.dropped = False
        self.deliver = deliver
        self.peer: NicJob | None = None
        """The same message's job at the receiving host's inbound direction (a path with both NICs)."""


class NicFlow:
    """One connection's messages at one NIC direction, in order: the head is being transmitted."""

    __slots__ = ("queue", "last_release_ms")

    def __init__(self) -> None:
        self.queue: deque[NicJob] = deque()
        self.last_release_ms = -math.inf


class NicDirection:
    """One direction of a NIC. ``fifo``: ``reserve(ready_ms, size)`` books the next transmit slot and
    ``receive`` delivers after it. ``fair``: ``submit`` (outbound), ``register`` then ``arrive`` (inbound)."""

    __slots__ = ("env", "name", "bandwidth_bytes_per_ms", "fair", "free_at_ms", "messages", "bytes", "_pending",
                 "_virtual", "_last_ms", "_heads", "_releases", "_seq", "_urgent", "_generation",
                 "_wakeup_ms", "_busy_ms")

    def __init__(self, env: Environment, name: str, bandwidth_bytes_per_ms: float, sharing: str = FAIR) -> None:
        if not bandwidth_bytes_per_ms > 0:  # also rejects NaN; inf means no transmit time
            raise ValueError(f"NIC {name!r}: bandwidth must be > 0 bytes/ms, got {bandwidth_bytes_per_ms!r}")
        if sharing not in DISCIPLINES:
            raise ValueError(f"NIC {name!r}: sharing must be one of {DISCIPLINES}, got {sharing!r}")
        self.env = env
        self.name = name
        self.bandwidth_bytes_per_ms = float(bandwidth_bytes_per_ms)
        self.fair = sharing == FAIR and not math.isinf(self.bandwidth_bytes_per_ms)
        """Processor sharing between connections (an infinitely fast NIC has nothing to share: fifo's
        code, which then costs nothing)."""
        self.free_at_ms = -math.inf
        """fifo: when the last reserved slot ends."""
        self.messages = 0
        self.bytes = 0
        self._pending = 0  # fifo inbound deliveries scheduled and not yet made
        # fair: virtual time (bytes each busy connection has been offered since the direction was last idle)
        self._virtual = 0.0
        self._last_ms = 0.0  # the time the fair state is up to date for
        self._heads: list[tuple[float, int, NicJob]] = []  # (finish tag, seq, job) of each busy connection
        self._releases: list[tuple[float, int, NicJob]] = []  # (first byte's arrival, seq, job), inbound
        self._seq = 0
        self._urgent = 0  # jobs whose completion must be acted on when it happens (events needed)
        self._generation = 0
        self._wakeup_ms = math.inf
        self._busy_ms = 0.0

    # --- fifo ---------------------------------------------------------------------------------------

    def reserve(self, ready_ms: float, size_bytes: int) -> tuple[float, float]:
        """Book the slot of a message whose first byte can be transmitted from ``ready_ms``: (start, end)."""
        start = self.free_at_ms if self.free_at_ms > ready_ms else ready_ms
        end = start + size_bytes / self.bandwidth_bytes_per_ms
        self.free_at_ms = end
        self.messages += 1
        self.bytes += size_bytes
        self._busy_ms += end - start
        return start, end

    def receive(self, first_byte_ms: float, size_bytes: int, deliver: Callable[[], None]) -> None:
        """Inbound: the message's last byte has just arrived (now) and its first at ``first_byte_ms``;
        ``deliver()`` runs once its slot is over -- at once if that is now and nothing is queued before it,
        so an idle NIC adds no event."""
        now = self.env.now
        _start, end = self.reserve(first_byte_ms, size_bytes)
        if end <= now and self._pending == 0:
            deliver()
            return
        self._pending += 1

        def done() -> None:
            self._pending -= 1
            deliver()

        Delivery(self.env, end - now if end > now else 0.0, done)

    # --- fair ---------------------------------------------------------------------------------------

    def submit(self, job: NicJob) -> None:
        """Outbound: the message is handed to the NIC now; ``job.on_start`` runs when it reaches the head of
        its connection (now, if the connection is idle here), ``job.on_done`` when it has been sent."""
        now = self.env.now
        self._advance(now)
        self._urgent += 1
        self._release(job, now)
        self._reschedule()

    def register(self, job: NicJob, first_byte_ms: float) -> None:
        """Inbound: the message's first byte will arrive at ``first_byte_ms`` (not before now); it competes
        for the NIC from then on. ``arrive(job)`` follows when its last byte has arrived."""
        flow = job.flow
        if first_byte_ms < flow.last_release_ms:
            first_byte_ms = flow.last_release_ms  # in order within a connection
        if first_byte_ms < self._last_ms:
            first_byte_ms = self._last_ms
        flow.last_release_ms = first_byte_ms
        self._seq += 1
        heappush(self._releases, (first_byte_ms, self._seq, job))

    def arrive(self, job: NicJob) -> None:
        """Inbound: the message's last byte has arrived (now): delivered now if the NIC has received it all,
        else when it has."""
        self._advance(self.env.now)
        if job.done:
            job.deliver()
            return
        job.waiting = True
        self._urgent += 1
        self._reschedule()

    def utilisation_busy_ms(self) -> float:
        """The time the direction has been transmitting (fifo: reserved slots, including ones still ahead;
        fair: up to the last time its state was brought up to date)."""
        return self._busy_ms

    def _release(self, job: NicJob, at_ms: float) -> None:
        """``job`` joins its connection at ``at_ms`` (the state is up to date for ``at_ms``)."""
        self.messages += 1
        self.bytes += job.size_bytes
        queue = job.flow.queue
        queue.append(job)
        if len(queue) == 1:
            self._start(job, at_ms)

    def _start(self, job: NicJob, at_ms: float) -> None:
        if not self._heads:
            self._virtual = 0.0  # idle: restart the virtual clock, so that a lone message is exact
        job.finish = self._virtual + job.size_bytes
        self._seq += 1
        job.seq = self._seq
        heappush(self._heads, (job.finish, job.seq, job))
        on_start = job.on_start
        if on_start is not None:
            on_start(job, at_ms)

    def _next_completion_ms(self) -> float:
        heads = self._heads
        if not heads:
            return math.inf
        return self._last_ms + (heads[0][0] - self._virtual) * len(heads) / self.bandwidth_bytes_per_ms

    def _advance(self, until_ms: float) -> None:
        """Bring the state up to ``until_ms``: releases and completions in time order (completions first at
        equal times). Completed jobs' ``on_done`` run as they complete."""
        heads = self._heads
        releases = self._releases
        bandwidth = self.bandwidth_bytes_per_ms
        while True:
            completion_ms = self._next_completion_ms()
            release_ms = releases[0][0] if releases else math.inf
            if completion_ms <= until_ms + _TOLERANCE_MS and completion_ms <= release_ms:
                at_ms = completion_ms if completion_ms > self._last_ms else self._last_ms
                self._busy_ms += at_ms - self._last_ms
                self._last_ms = at_ms
                finish = heads[0][0]
                self._virtual = finish
                done = [heappop(heads)[2]]  # every head with this tag first: a successor starts after them
                while heads and heads[0][0] <= finish:
                    done.append(heappop(heads)[2])
                for job in done:
                    self._complete(job, at_ms)
            elif release_ms <= until_ms:
                if heads:
                    self._virtual += (release_ms - self._last_ms) * bandwidth / len(heads)
                    self._busy_ms += release_ms - self._last_ms
                if release_ms > self._last_ms:
                    self._last_ms = release_ms
                self._release(heappop(releases)[2], release_ms)
            else:
                break
        if until_ms > self._last_ms:
            if heads:
                self._virtual += (until_ms - self._last_ms) * bandwidth / len(heads)
                self._busy_ms += until_ms - self._last_ms
            self._last_ms = until_ms

    def _complete(self, job: NicJob, at_ms: float) -> None:
        job.done = True
        queue = job.flow.queue
        queue.popleft()
        on_done = job.on_done
        if on_done is not None:  # outbound
            self._urgent -= 1
            on_done(job, at_ms)
        elif job.waiting:  # inbound, its last byte already here
            self._urgent -= 1
            job.deliver()
        if queue:
            self._start(queue[0], at_ms)

    def _reschedule(self) -> None:
        """One pending event, at the next completion, while some completion must be acted on."""
        due = self._next_completion_ms() if self._urgent > 0 else math.inf
        if due == self._wakeup_ms:
            return
        self._generation += 1
        self._wakeup_ms = due
        if due < math.inf:
            now = self.env.now
            generation = self._generation
            Delivery(self.env, due - now if due > now else 0.0, lambda: self._woken(generation))

    def _woken(self, generation: int) -> None:
        if generation != self._generation:
            return  # superseded
        self._wakeup_ms = math.inf
        self._advance(self.env.now)
        self._reschedule()

    def __repr__(self) -> str:
        return f"NicDirection({self.name!r}, messages={self.messages}, bytes={self.bytes})"


class Nic:
    """A host's NIC: ``inbound`` and ``outbound`` directions, each with its own bandwidth (bytes per ms), both
    with the same discipline (``sharing``: ``fair`` or ``fifo``)."""

    __slots__ = ("name", "inbound", "outbound")

    def __init__(
        self,
        env: Environment,
        name: str,
        inbound_bandwidth_bytes_per_ms: float,
        outbound_bandwidth_bytes_per_ms: float | None = None,
        sharing: str = FAIR,
    ) -> None:
        self.name = name
        self.inbound = NicDirection(env, f"{name}/in", inbound_bandwidth_bytes_per_ms, sharing)
        self.outbound = NicDirection(
            env,
            f"{name}/out",
            outbound_bandwidth_bytes_per_ms if outbound_bandwidth_bytes_per_ms is not None
            else inbound_bandwidth_bytes_per_ms,
            sharing,
        )

    def __repr__(self) -> str:
        return f"Nic({self.name!r})"
