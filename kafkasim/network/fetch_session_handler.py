"""A fetcher's side of an incremental fetch session (KIP-227): Kafka's ``FetchSessionHandler``.

One handler per fetcher and destination broker (a replica fetcher thread toward its leader, a consumer's
fetch toward each broker it reads from). Before each request the fetcher lists every partition it wants
with its ``PartitionData`` (``Builder.add``); ``Builder.build()`` decides what to send:

* no session yet (or it was lost): a full request ``(id, 0)`` with every partition;
* a session: an incremental request ``(id, epoch)`` carrying only the partitions that are new or whose
  ``PartitionData`` changed (fetch offset, log start offset, max bytes, current leader epoch, last
  fetched epoch), plus the partitions to forget. A caught-up, idle follower sends none at all.

A fetcher that knows which partitions changed since its last request (a follower's log appended to or
truncated, a consumer's position moved, a partition delayed or ready again) calls
``build_incremental(changes)`` instead of listing every partition: the same request as ``Builder.build``
for the cost of the partitions that changed (see its docstring for why it is the same).

``handle_response`` moves the session on from the broker's answer (new session, next epoch, or back to a
full request); ``handle_error`` (a timeout or a broken connection) makes the next request a full one that
closes the old session and asks for a new one.

Plain Python, no SimPy: the replica fetcher (``server/``) and the consumer (``clients/``) both use it.
Topic ids are not simulated, so Kafka's ``toReplace`` list and ``canUseTopicIds`` flag have no equivalent.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from operator import itemgetter

from kafkasim.broker.errors import Errors
from kafkasim.broker.fetch import PartitionData
from kafkasim.broker.fetch_session import (
    INITIAL_METADATA,
    INVALID_SESSION_ID,
    FetchMetadata,
    FetchResponse,
    new_incremental,
)
from kafkasim.broker.records import TopicPartition


class FetchSessionRequestData:
    """What ``Builder.build()`` decided (Kafka's ``FetchSessionHandler.FetchRequestData``): ``to_send`` the
    partitions to put in the request (in order), ``to_forget`` the partitions to drop from the session,
    ``session_partitions`` every partition of the session, ``metadata`` the request's (session id, epoch).
    """

    __slots__ = ("to_send", "to_forget", "session_partitions", "metadata")

    def __init__(
        self,
        to_send: dict[TopicPartition, PartitionData],
        to_forget: list[TopicPartition],
        session_partitions: dict[TopicPartition, PartitionData],
        metadata: FetchMetadata,
    ) -> None:
        self.to_send = to_send
        self.to_forget = to_forget
        self.session_partitions = session_partitions
        self.metadata = metadata

    @property
    def fetch_infos(self) -> list[tuple[TopicPartition, PartitionData]]:
        """``to_send`` as the request's ``[(tp, PartitionData)]``."""
        return list(self.to_send.items())

    def __repr__(self) -> str:
        kind = "Full" if self.metadata.is_full else "Incremental"
        return (
            f"{kind}FetchRequest({self.metadata}, toSend={len(self.to_send)}, toForget={len(self.to_forget)}, "
            f"session={len(self.session_partitions)})"
        )


class FetchSessionHandler:
    """The session state toward broker ``node`` (Kafka's ``FetchSessionHandler``)."""

    __slots__ = ("node", "next_metadata", "session_partitions", "_session_order", "_next_order")

    def __init__(self, node: int) -> None:
        self.node = node
        self.next_metadata: FetchMetadata = INITIAL_METADATA
        """The metadata of the next request."""
        self.session_partitions: dict[TopicPartition, PartitionData] = {}
        """Every partition of the session with the data last sent for it, in session order."""
        # Each session partition's rank in session order (increasing along ``session_partitions``; not
        # contiguous): what ``build_incremental`` sorts the altered and removed partitions by.
        self._session_order: dict[TopicPartition, int] = {}
        self._next_order = 0

    def _reset_session_order(self) -> None:
        """A full request made ``session_partitions`` anew: rank them in their order."""
        self._session_order = {tp: i for i, tp in enumerate(self.session_partitions)}
        self._next_order = len(self._session_order)

    def _append_session_order(self, tp: TopicPartition) -> None:
        self._session_order[tp] = self._next_order
        self._next_order += 1

    @property
    def session_id(self) -> int:
        return self.next_metadata.session_id

    def new_builder(self, copy_session_partitions: bool = True) -> Builder:
        """``newBuilder``; the replica fetcher passes ``copy_session_partitions=False`` (``newBuilder(size,
        false)``): the result then shares the handler's map instead of a copy."""
        return Builder(self, copy_session_partitions)

    def build_incremental(
        self, changes: list[tuple[int, TopicPartition, PartitionData | None]]
    ) -> FetchSessionRequestData:
        """The next request, incremental, from the partitions that changed since the previous request:
        each ``(fetcher rank, tp, data)`` with the data now wanted for ``tp`` or None if it is no longer
        wanted (delayed, removed); the rank is ``tp``'s place in the fetcher's order (the order it would
        ``Builder.add`` its partitions in). Gives what ``Builder.build`` gives for the fetcher's every
        wanted partition, at the cost of ``changes``: sorting it, not walking the session.

        Why it is the same: after every ``build`` the session holds exactly the partitions that request
        wanted, with data equal to what was wanted (a full request makes them the session; an incremental
        one adds the added, re-values the altered, drops the removed). So if every partition whose wanted
        data or wantedness changed since is in ``changes`` (more is harmless: an unchanged entry is neither
        added, altered nor removed), ``build``'s walk finds added = wanted partitions not in the session, in
        the fetcher's order; altered = session partitions whose data is not equal, in session order;
        removed = session partitions not wanted, in session order -- exactly the ones sorted out here.
        The request: ``to_send`` the added then the altered, ``to_forget`` the removed; the session drops
        the removed, takes the altered data in place and appends the added (``build``'s order).

        Only for an incremental request (``next_metadata`` not full): a full one lists every partition, use
        ``new_builder``. ``changes`` names a partition at most once. The result's ``session_partitions`` is
        the handler's own map (``newBuilder(size, false)``'s sharing).
        """
        metadata = self.next_metadata
        if metadata.is_full:
            raise RuntimeError("FetchSessionHandler.build_incremental: the next request is a full one")
        session = self.session_partitions
        order = self._session_order
        added: list[tuple[int, TopicPartition, PartitionData]] = []
        altered: list[tuple[int, TopicPartition, PartitionData]] = []
        removed: list[tuple[int, TopicPartition]] = []
        for rank, tp, data in changes:
            prev = session.get(tp)
            if prev is None:
                if data is not None:
                    added.append((rank, tp, data))
            elif data is None:
                removed.append((order[tp], tp))
            elif data is not prev and data != prev:
                altered.append((order[tp], tp, data))
        to_send: dict[TopicPartition, PartitionData] = {}
        if added:
            added.sort(key=_rank)
            for _, tp, data in added:
                to_send[tp] = data
        if altered:
            altered.sort(key=_rank)
            for _, tp, data in altered:
                to_send[tp] = data
                session[tp] = data
        to_forget: list[TopicPartition] = []
        if removed:
            removed.sort(key=_rank)
            for _, tp in removed:
                to_forget.append(tp)
                del session[tp]
                del order[tp]
        for _, tp, data in added:
            session[tp] = data
            self._append_session_order(tp)
        return FetchSessionRequestData(to_send, to_forget, session, metadata)

    # --- responses ---------------------------------------------------------------------------------

    def verify_full_fetch_response_partitions(self, topic_partitions: Collection[TopicPartition]) -> str | None:
        """``verifyFullFetchResponsePartitions``: None if a full response names exactly the session's
        partitions, else what is wrong."""
        extra = find_missing(topic_partitions, self.session_partitions.keys())
        omitted = find_missing(self.session_partitions.keys(), topic_partitions)
        if not extra and not omitted:
            return None
        problem = ""
        if omitted:
            problem += f"omittedPartitions=({', '.join(map(str, omitted))}), "
        if extra:
            problem += f"extraPartitions=({', '.join(map(str, extra))}), "
        return problem + f"response=({', '.join(map(str, topic_partitions))})"

    def verify_incremental_fetch_response_partitions(
        self, topic_partitions: Collection[TopicPartition]
    ) -> str | None:
        """``verifyIncrementalFetchResponsePartitions``: None if every partition answered is in the session."""
        extra = find_missing(topic_partitions, self.session_partitions.keys())
        if not extra:
            return None
        return (
            f"extraPartitions=({', '.join(map(str, extra))}), "
            f"response=({', '.join(map(str, topic_partitions))})"
        )

    def handle_response(self, response: FetchResponse) -> bool:
        """``handleResponse``: True if the response can be processed; False if it cannot (a session error,
        or partitions that do not match the session), in which case its partitions must be ignored.

        * error FETCH_SESSION_ID_NOT_FOUND: the next request is full and asks for a new session (0, 0);
          any other error: full, closing the old id and asking for a new one (id, 0);
        * a full request answered with session id 0: stay sessionless (full requests);
          with an id: that session starts, the next request is incremental with epoch 1;
        * an incremental request answered: the next epoch (or back to full if the broker closed it).
        """
        error = response.error
        if error != Errors.NONE:
            if error == Errors.FETCH_SESSION_ID_NOT_FOUND:
                self.next_metadata = INITIAL_METADATA
            else:
                self.next_metadata = self.next_metadata.next_close_existing_attempt_new()
            return False
        session_id = response.session_id
        topic_partitions = {tp: None for tp, _ in response.responses}.keys()
        if self.next_metadata.is_full:
            if self.verify_full_fetch_response_partitions(topic_partitions) is not None:
                self.next_metadata = INITIAL_METADATA
                return False
            if session_id == INVALID_SESSION_ID:
                self.next_metadata = INITIAL_METADATA
            else:
                self.next_metadata = new_incremental(session_id)
            return True
        if self.verify_incremental_fetch_response_partitions(topic_partitions) is not None:
            self.next_metadata = self.next_metadata.next_close_existing_attempt_new()
            return False
        if session_id == INVALID_SESSION_ID:
            # The broker closed the session (it became empty).
            self.next_metadata = INITIAL_METADATA
        else:
            self.next_metadata = self.next_metadata.next_incremental()
        return True

    def notify_close(self) -> None:
        """``notifyClose``: the next request closes the session (id, -1) and asks for none."""
        self.next_metadata = self.next_metadata.next_close_existing()

    def handle_error(self) -> None:
        """``handleError``: the request failed (timeout, disconnect): close the session on the next request
        and try a new one."""
        self.next_metadata = self.next_metadata.next_close_existing_attempt_new()

    def __repr__(self) -> str:
        return (
            f"FetchSessionHandler(node={self.node}, next={self.next_metadata}, "
            f"partitions={len(self.session_partitions)})"
        )


class Builder:
    """The partitions wanted in the next request (Kafka's ``FetchSessionHandler.Builder``): ``add`` each,
    in the fetcher's order, then ``build()`` once."""

    __slots__ = ("handler", "copy_session_partitions", "next")

    def __init__(self, handler: FetchSessionHandler, copy_session_partitions: bool = True) -> None:
        self.handler = handler
        self.copy_session_partitions = copy_session_partitions
        self.next: dict[TopicPartition, PartitionData] | None = {}

    def add(self, tp: TopicPartition, data: PartitionData) -> None:
        """Want ``tp`` with ``data`` in the upcoming fetch."""
        if self.next is None:
            raise RuntimeError("FetchSessionHandler.Builder: add after build")
        self.next[tp] = data

    def build(self) -> FetchSessionRequestData:
        """``build``: a full request sends every partition (and they become the session); an incremental
        one sends the added and altered partitions -- added ones first, then altered ones, each moved to the
        end of the wanted order -- and forgets the partitions no longer wanted."""
        nxt = self.next
        if nxt is None:
            raise RuntimeError("FetchSessionHandler.Builder: build called twice")
        self.next = None
        handler = self.handler
        metadata = handler.next_metadata
        if metadata.is_full:
            handler.session_partitions = nxt
            handler._reset_session_order()
            to_send = dict(nxt)
            return FetchSessionRequestData(to_send, [], to_send, metadata)
        session = handler.session_partitions
        removed: list[TopicPartition] = []
        for tp, prev_data in session.items():
            next_data = nxt.pop(tp, None)
            if next_data is not None:
                if next_data is not prev_data and next_data != prev_data:
                    # Altered: re-add it at the end of `next`, and remember the new data (a value
                    # change, safe while iterating).
                    nxt[tp] = next_data
                    session[tp] = next_data
            else:
                removed.append(tp)
        order = handler._session_order
        for tp in removed:
            del session[tp]
            del order[tp]
        # New partitions join the session. The partitions seen in the loop above were moved to the end of
        # `next` (or dropped from it), so the first one already in the session ends the new ones.
        for tp, next_data in nxt.items():
            if tp in session:
                break
            session[tp] = next_data
            handler._append_session_order(tp)
        session_partitions = dict(session) if self.copy_session_partitions else session
        return FetchSessionRequestData(nxt, removed, session_partitions, metadata)


# An entry's rank (its first field); a C key, no frame per element.
_rank = itemgetter(0)


def find_missing(
    to_find: Iterable[TopicPartition], to_search: Collection[TopicPartition]
) -> list[TopicPartition]:
    """``FetchSessionHandler.findMissing``: the items of ``to_find`` not in ``to_search``, in order."""
    return [tp for tp in to_find if tp not in to_search]
