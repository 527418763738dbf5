"""TCP's retransmission under a connection: Linux's timeouts, and one direction's stream of segments.

A TCP connection is reliable and ordered: a segment lost on the wire (sent while its link is down, or on the
wire when a network partition cuts it) is retransmitted by the sender's kernel after the retransmission
timeout (RTO), and the RTO doubles on every further retry (Linux ``tcp_retransmit_timer``: ``icsk_backoff``,
``inet_csk_rto_backoff``) up to ``TCP_RTO_MAX``. Everything the connection sends after a lost segment is
delivered behind it, in order. So an outage shorter than the clients' own timeouts only delays the stream: it
resumes at the first retransmission after the link is back. The kernel gives up (ETIMEDOUT, the connection is
broken) at the first timer expiry ``tcp_retries2`` = 15 allows no more: Linux's ``retransmits_timed_out``
models that as a time, ``tcp_model_timeout`` = 924.6 s after the head segment's first transmission with
``TCP_RTO_MIN`` = 200 ms.

The RTO follows ``tcp_set_rto``: ``srtt + rttvar``, where ``tcp_rtt_estimator`` floors ``rttvar`` (its
``mdev_max``) at ``tcp_rto_min``, so on a data-centre network (4 x the RTT's deviation far under 200 ms)
RTO = srtt + ``TCP_RTO_MIN``. The model's srtt is the latest round trip its links drew (the last one-way
latency of each direction added), a simple stand-in for the kernel's smoothed estimate.

Left out (simplifications, README): the window and congestion control (a resumed stream sends everything it
holds at once; slow start after a loss is not modelled), SACK and fast retransmit (only the timer
retransmits; everything behind a lost segment is resent after it, as go-back-N), delayed ACKs, and ACKs as
packets (an ACK is never lost: a retransmission that gets through ends the loss). A retransmission into a
link that is still down is counted (``NetworkLink.retransmitted``), not transmitted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

TCP_RTO_MIN_MS: Final = 200.0
"""Linux ``TCP_RTO_MIN`` (``HZ / 5``), the floor of the RTO (``net.ipv4.tcp_rto_min_us`` on 6.x kernels)."""
TCP_RTO_MAX_MS: Final = 120_000.0
"""Linux ``TCP_RTO_MAX``: the backed-off RTO never exceeds it."""
TCP_RETRIES2: Final = 15
"""Linux ``net.ipv4.tcp_retries2``: how many retransmissions of an established connection's segment before the
kernel gives up (as a time: ``retransmits_timeout_ms``)."""


def retransmits_timeout_ms(retries: int = TCP_RETRIES2, rto_base_ms: float = TCP_RTO_MIN_MS) -> float:
    """Linux ``tcp_model_timeout``: the time ``retries`` backed-off retransmissions take, from ``rto_base_ms``
    doubling up to ``TCP_RTO_MAX``; 924.6 s for the defaults."""
    linear_backoff_thresh = int(TCP_RTO_MAX_MS / rto_base_ms).bit_length() - 1  # ilog2
    if retries <= linear_backoff_thresh:
        return ((2 << retries) - 1) * rto_base_ms
    return ((2 << linear_backoff_thresh) - 1) * rto_base_ms + (retries - linear_backoff_thresh) * TCP_RTO_MAX_MS


def tcp_rto_ms(srtt_ms: float, rto_min_ms: float = TCP_RTO_MIN_MS) -> float:
    """Linux ``tcp_set_rto`` with ``rttvar`` at its floor ``rto_min``: ``srtt + rto_min``, at most TCP_RTO_MAX."""
    rto = srtt_ms + rto_min_ms
    return rto if rto < TCP_RTO_MAX_MS else TCP_RTO_MAX_MS


class TcpSettings:
    """A run's TCP parameters (Linux's defaults unless the scenario's ``network.tcp`` says otherwise)."""

    __slots__ = ("rto_min_ms", "retries2", "give_up_ms")

    def __init__(self, rto_min_ms: float = TCP_RTO_MIN_MS, retries2: int = TCP_RETRIES2) -> None:
        if not 0 < rto_min_ms <= TCP_RTO_MAX_MS:
            raise ValueError(f"tcp rto_min must be in (0, {TCP_RTO_MAX_MS}] ms, got {rto_min_ms!r}")
        if retries2 < 0:
            raise ValueError(f"tcp_retries2 must be >= 0, got {retries2!r}")
        self.rto_min_ms = float(rto_min_ms)
        self.retries2 = retries2
        self.give_up_ms = retransmits_timeout_ms(retries2, TCP_RTO_MIN_MS)
        """``retransmits_timed_out``'s bound (Linux computes it from TCP_RTO_MIN, not the route's rto_min)."""


LINUX_TCP: Final = TcpSettings()

# What a retransmission timer's expiry did (``Observer.tcp_retransmission``; the retransmissions table's outcome).
TCP_THROUGH: Final = "got through"
TCP_LOST_AGAIN: Final = "lost again"
TCP_GAVE_UP: Final = "gave up (ETIMEDOUT)"


class Segment:
    """One message of a stream: a request or a response (``seq`` orders the stream)."""

    __slots__ = ("seq", "size_bytes", "deliver", "sent_ms")

    def __init__(self, seq: int, size_bytes: int, deliver: Callable[[], None], sent_ms: float) -> None:
        self.seq = seq
        self.size_bytes = size_bytes
        self.deliver = deliver
        self.sent_ms = sent_ms
        """When it was last transmitted."""


def hold(held: list[Segment], segment: Segment) -> None:
    """Put ``segment`` among the segments waiting behind a loss, in stream order."""
    i = len(held)
    while i > 0 and held[i - 1].seq > segment.seq:
        i -= 1
    held.insert(i, segment)
