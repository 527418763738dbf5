"""Network partitions: when the network between two hosts is cut.

A partition separates two sets of hosts for a time window: every host of one side loses its network to every
host of the other side, both ways; hosts it does not name keep all their links. Hosts are ``broker-<id>``,
clients by name (a producer or consumer; a replica fetcher thread is on its broker's host) and
``controller`` (the KRaft controller's host).

A cut is like a pulled cable, not a refused connection: nothing tells the sender (no RST). A message is lost
on the wire if it is there at any moment the cut lasts, i.e. sent at ``s`` and due at ``a`` with ``s < end``
and ``a >= start``: messages sent during the cut, and messages already in flight when it starts that would
arrive during it (or, sent before it, after it: the wire was cut under them). A connection's TCP retransmits
it (``kafkasim.network.tcp``): a cut shorter than the clients' timeouts delays the stream; a longer one ends
with the client's own request timeout (``request.timeout.ms`` for clients, ``replica.socket.timeout.ms`` for
fetchers), as Kafka's ``NetworkClient.handleTimedOutRequests`` does. A ``link_drop`` fault, by contrast, only
loses what is *sent* while it lasts.

The windows are known when the run is built (they come from the scenario), so a connection opened at any
time -- a reconnect, or a client's first connection to a broker that became leader mid-run -- asks
``NetworkPartitions.between(host_a, host_b)`` for its ``Cut`` once: None when no partition ever separates the
two hosts, which keeps the per-message cost of every other connection at nothing.

Example: partitions [broker-0] | [broker-1, p1] from 10 s to 30 s and [broker-0] | [broker-1] from 20 s to
40 s. ``between("broker-1", "broker-0")`` cuts [10 s, 40 s) (overlapping windows of one host pair merge, so
nested partitions end with the last of them); ``between("p1", "broker-0")`` cuts [10 s, 30 s);
``between("p1", "broker-1")`` is None (same side). A request p1 sent to broker-0 at 9.999 s that takes 2 ms
is lost; one sent at 30 s arrives.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from typing import Final

CONTROLLER_HOST: Final = "controller"
"""The KRaft controller's host name in partitions."""


def broker_host(broker_id: int) -> str:
    """Broker ``broker_id``'s host name in partitions."""
    return f"broker-{broker_id}"


class Cut:
    """The windows during which the network between two hosts is cut: sorted, disjoint ``[start, end)``
    intervals in ms (``end`` may be ``inf``: cut to the end of the run)."""

    __slots__ = ("starts", "ends")

    def __init__(self, windows: Iterable[tuple[float, float]]) -> None:
        merged: list[list[float]] = []
        for start, end in sorted(windows):
            if not end > start:
                continue
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        self.starts = [w[0] for w in merged]
        self.ends = [w[1] for w in merged]

    @property
    def windows(self) -> list[tuple[float, float]]:
        return list(zip(self.starts, self.ends, strict=True))

    def severs(self, sent_ms: float, arrives_ms: float) -> bool:
        """Whether a message sent at ``sent_ms`` and due at ``arrives_ms`` is lost: the cut overlaps the
        time it spends on the wire."""
        # The last window starting at or before the arrival; it is the only one that can still be open.
        i = bisect_right(self.starts, arrives_ms) - 1
        return i >= 0 and self.ends[i] > sent_ms

    def until(self, time_ms: float) -> float | None:
        """The end of the cut in force at ``time_ms``, or None if the hosts are connected then."""
        i = bisect_right(self.starts, time_ms) - 1
        if i >= 0 and self.ends[i] > time_ms:
            return self.ends[i]
        return None

    def __repr__(self) -> str:
        return f"Cut({self.windows!r})"


class NetworkPartitions:
    """Every partition of a run, asked per host pair: ``between(a, b)`` (symmetric)."""

    __slots__ = ("_windows", "_cuts")

    def __init__(self) -> None:
        self._windows: dict[frozenset[str], list[tuple[float, float]]] = {}
        self._cuts: dict[frozenset[str], Cut | None] = {}

    def add(self, start_ms: float, end_ms: float, side_a: Sequence[str], side_b: Sequence[str]) -> None:
        """Cut every host of ``side_a`` off from every host of ``side_b`` during ``[start_ms, end_ms)``."""
        if set(side_a) & set(side_b):
            raise ValueError(f"a host cannot be on both sides of a partition: {sorted(set(side_a) & set(side_b))}")
        for a in side_a:
            for b in side_b:
                self._windows.setdefault(frozenset((a, b)), []).append((float(start_ms), float(end_ms)))
        self._cuts.clear()

    def between(self, host_a: str, host_b: str) -> Cut | None:
        """The cut between two hosts, or None if no partition ever separates them."""
        key = frozenset((host_a, host_b))
        try:
            return self._cuts[key]
        except KeyError:
            windows = self._windows.get(key)
            cut = Cut(windows) if windows else None
            self._cuts[key] = cut
            return cut

    def __bool__(self) -> bool:
        return bool(self._windows)


PartitionWindow = tuple[float, float, Sequence[str], Sequence[str]]
"""One network partition: from ``start_ms`` to ``end_ms`` (``math.inf``: never healed), side A, side B."""


def network_partitions(windows: Iterable[PartitionWindow]) -> NetworkPartitions | None:
    """The run's network partitions, or None if it has none (then no connection pays anything for them)."""
    partitions: NetworkPartitions | None = None
    for start_ms, end_ms, side_a, side_b in windows:
        if partitions is None:
            partitions = NetworkPartitions()
        partitions.add(start_ms, end_ms, side_a, side_b)
    return partitions
