"""Named random streams: every component draws from its own stream, derived from (seed, name).

Derivation uses SHA-256, not Python's `hash()` (salted per process for str), so a stream is the same on
every machine and Python run. Because a stream depends only on the seed and its own name, adding a
producer never shifts the draws of a follower.
"""

from __future__ import annotations

import hashlib
import random


def stream_seed(seed: int, name: str) -> int:
    """The 256-bit integer seed of stream `name` under scenario seed `seed`."""
    digest = hashlib.sha256(f"kafkasim:{seed}:{name}".encode()).digest()
    return int.from_bytes(digest, "big")


class RandomStreams:
    """`RandomStreams(seed).stream("producer-1/arrivals")` -> a `random.Random` for that component.

    Asking twice for the same name returns the same generator (it is one stream, not a restart).
    """

    def __init__(self, seed: object) -> None:
        # `object`, checked here: a compiled `int` parameter would take True as 1 and reject "1" with mypyc's
        # own message.
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"seed must be an int, got {type(seed).__name__} {seed!r}")
        self._seed = seed
        self._streams: dict[str, random.Random] = {}

    @property
    def seed(self) -> int:
        return self._seed

    def stream(self, name: str) -> random.Random:
        rng = self._streams.get(name)
        if rng is None:
            rng = self._streams[name] = random.Random(stream_seed(self._seed, name))
        return rng

    @property
    def names(self) -> list[str]:
        """Names of the streams handed out so far, in order of first use."""
        return list(self._streams)
