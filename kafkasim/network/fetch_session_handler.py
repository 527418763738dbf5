"""A fetcher's side of an incremental fetch session (KIP-227): Kafka's ``FetchSessionHandler``.

One handler per fetcher and destination broker (a replica fetcher thread toward its leader, a consumer's
fetch toward each broker it reads from). Before each request the fetcher lists every partition it wants
with its ``PartitionData`` (``Builder.add``); ``Builder.build()`` decides what to send:

* no session yet (or it was lost): a full request ``(id, 0)`` with every partition;
* a session: an incremental request ``(id, epoch)`` carrying only the partitions that are new or whose
  ``PartitionData`` changed (fetch offset, log start offset, max bytes, current leader epoch, last
  fetched epoch), plus the partitions to forget. A caught-up, idle follower sends none at all.

``handle_response`` moves the session on from the broker's answer (new session, next epoch, or back to a
full request); ``handle_error`` (a timeout or a broken connection) makes the next request a full one that
closes the old session and asks for a new one.

Plain Python, no SimPy: the replica fetcher (``server/``) and the consumer (``clients/``) both use it.
Topic ids are not simulated, so Kafka's ``toReplace`` list and ``canUseTopicIds`` flag have no equivalent.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

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

    __slots__ = ("node", "next_metadata", "session_partitions")

    def __init__(self, node: int) -> None:
        self.node = node
        self.next_metadata: FetchMetadata = INITIAL_METADATA
        """The metadata of the next request."""
        self.session_partitions: dict[TopicPartition, PartitionData] = {}
        """Every partition of the session with the data last sent for it, in session order."""

    @property
    def session_id(self) -> int:
        return self.next_metadata.session_id

    @property
    def session_topic_partitions(self) -> Collection[TopicPartition]:
        return self.session_partitions.keys()

    def new_builder(self, copy_session_partitions: bool = True) -> Builder:
        """``newBuilder``; the replica fetcher passes ``copy_session_partitions=False`` (``newBuilder(size,
        false)``): the result then shares the handler's map instead of a copy."""
        return Builder(self, copy_session_partitions)

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
        topic_partitions = dict.fromkeys(tp for tp, _ in response.responses).keys()
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
        for tp in removed:
            del session[tp]
        # New partitions join the session. The partitions seen in the loop above were moved to the end of
        # `next` (or dropped from it), so the first one already in the session ends the new ones.
        for tp, next_data in nxt.items():
            if tp in session:
                break
            session[tp] = next_data
        session_partitions = dict(session) if self.copy_session_partitions else session
        return FetchSessionRequestData(nxt, removed, session_partitions, metadata)


def find_missing(
    to_find: Iterable[TopicPartition], to_search: Collection[TopicPartition]
) -> list[TopicPartition]:
    """``FetchSessionHandler.findMissing``: the items of ``to_find`` not in ``to_search``, in order."""
    return [tp for tp in to_find if tp not in to_search]
