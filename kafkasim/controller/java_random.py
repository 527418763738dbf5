"""``java.util.Random`` and ``Collections.shuffle``, bit for bit, so Kafka's placer draws what Kafka draws.

Kafka's ``StripedReplicaPlacer`` takes a ``java.util.Random``: its start offsets are ``nextInt(size)``
and its reshuffles ``Collections.shuffle(list, random)``. Porting the 48-bit linear congruential generator
(the JDK's documented algorithm) lets the placer's own tests, written against a deterministic ``Random``,
run here unchanged, and makes a run's placement depend only on the seed its ``Random`` starts from.
"""

from __future__ import annotations

from typing import TypeVar

_MULTIPLIER = 0x5DEECE66D
_ADDEND = 0xB
_MASK = (1 << 48) - 1
_INT_MAX = 2**31 - 1

T = TypeVar("T")


def to_int32(value: int) -> int:
    """Java's ``(int)`` cast: the low 32 bits, two's complement."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


class JavaRandom:
    """``java.util.Random(seed)``: ``next(bits)``, ``next_int(bound)``; a subclass may replace ``next``."""

    def __init__(self, seed: int = 0) -> None:
        # Random.initialScramble: the seed is a Java long; only its low 48 bits survive the mask.
        self._seed = (seed ^ _MULTIPLIER) & _MASK

    def next(self, bits: int) -> int:
        """``Random.next(bits)``: the top ``bits`` of the 48-bit state, as a Java int."""
        self._seed = (self._seed * _MULTIPLIER + _ADDEND) & _MASK
        return to_int32(self._seed >> (48 - bits))

    def next_int(self, bound: int) -> int:
        """``Random.nextInt(bound)``: uniform in [0, bound), with the JDK's rejection of the biased tail."""
        if bound <= 0:
            raise ValueError(f"bound must be positive, got {bound}")
        r = self.next(31)
        m = bound - 1
        if bound & m == 0:  # a power of two: the high bits, (int)((bound * (long) r) >> 31)
            return (bound * r) >> 31
        u = r
        r = u % bound
        while u - r + m > _INT_MAX:  # Java: `u - r + m < 0`, an int overflow
            u = self.next(31)
            r = u % bound
        return r


def shuffle(items: list[T], random: JavaRandom) -> None:
    """``Collections.shuffle(list, random)`` for a random-access list: swap i-1 with nextInt(i), i = n..2."""
    for i in range(len(items), 1, -1):
        j = random.next_int(i)
        items[i - 1], items[j] = items[j], items[i - 1]
