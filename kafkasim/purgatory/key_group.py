"""KeyGroup: one immutable, ordered set of watch keys that many delayed operations share.

Kafka parks a follower's fetch on the key of every partition it names (`ReplicaManager.fetchMessages` ->
`tryCompleteElseWatch(delayedFetch, delayedFetchKeys)`), so a session of 1,000 partitions costs 1,000
watch-list appends per parked fetch. A fetch session (KIP-227) names the same partitions fetch after fetch;
built once as a `KeyGroup`, they can be watched in O(1) by `DelayedOperationPurgatory`, which gives every
answer Kafka's per-key watch lists would give (see `DelayedOperationPurgatory.try_complete_else_watch`).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator


class KeyGroup:
    """An immutable, ordered, duplicate-free, non-empty collection of hashable keys.

    Watching ``KeyGroup([k1, k2, k3])`` is observably the same as watching ``[k1, k2, k3]``. A group is
    equal only to itself (identity, like the fetch session that owns it): two groups with the same keys are
    two groups, each indexed once by the purgatory that watches it. Build it once and reuse it for every
    operation that watches the same keys; call ``DelayedOperationPurgatory.release_group`` when its owner
    will not watch it again.
    """

    __slots__ = ("_keys", "_members")

    def __init__(self, keys: Iterable[Hashable]) -> None:
        if isinstance(keys, (str, bytes)):
            raise ValueError(f"KeyGroup: keys must be an iterable of keys, not the single string {keys!r}")
        ordered = tuple(keys)
        if not ordered:
            raise ValueError("KeyGroup: a group needs at least one key, got none")
        members = frozenset(ordered)
        if len(members) != len(ordered):
            seen: set[Hashable] = set()
            duplicate: Hashable = None
            for key in ordered:
                if key in seen:
                    duplicate = key
                    break
                seen.add(key)
            raise ValueError(
                f"KeyGroup: keys must be distinct, {duplicate!r} appears more than once "
                f"({len(ordered)} keys, {len(members)} distinct)"
            )
        self._keys = ordered
        self._members = members

    @property
    def keys(self) -> tuple[Hashable, ...]:
        """The keys, in the order they were given."""
        return self._keys

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[Hashable]:
        return iter(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._members

    def __repr__(self) -> str:
        shown = ", ".join(repr(key) for key in self._keys[:3])
        more = f", ... ({len(self._keys)} keys)" if len(self._keys) > 3 else ""
        return f"KeyGroup([{shown}{more}])"
