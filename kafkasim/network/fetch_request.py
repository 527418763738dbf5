"""The one way the consumer and the replica fetcher build a Fetch request (Kafka's ``FetchRequest.Builder``)
from what their fetch session decided (``FetchSessionHandler.Builder.build``, KIP-227: full, then
incremental)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkasim.network.messages import Api, FetchRequestData, RequestEnvelope, fetch_request_data_bytes

if TYPE_CHECKING:
    from kafkasim.network.fetch_session_handler import FetchSessionRequestData
    from kafkasim.network.ids import IdSource


def fetch_request(
    ids: IdSource,
    api: Api,
    client: str,
    replica_id: int,
    max_wait_ms: int,
    min_bytes: int,
    max_bytes: int,
    fetch_data: FetchSessionRequestData,
    now: float,
) -> RequestEnvelope:
    """One Fetch request (``FetchRequest.Builder``) of ``client``, sent now: the partitions, forgotten
    partitions and session metadata ``fetch_data`` holds (``FetchSessionHandler.Builder.build``), sized as
    sent; the NetworkClient that sends it routes its response."""
    body = FetchRequestData(
        replica_id, max_wait_ms, min_bytes, max_bytes, fetch_data.fetch_infos,
        metadata=fetch_data.metadata, to_forget=fetch_data.to_forget,
    )
    return RequestEnvelope(
        ids.request_id(), api, client, body, fetch_request_data_bytes(body), now, now)
