"""Kafka's ``KafkaChannel``: the broker side of one client connection.

A channel names its network thread by index, as Kafka's ``RequestChannel.Request`` carries ``processor``
(the id ``RequestChannel.sendResponse`` looks the processor up by), rather than holding the
``SocketServer.Processor`` itself: a request (``kafkasim.network.messages``) can then name its channel
without the message types depending on the socket server.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kafkasim.network.messages import RequestEnvelope


class KafkaChannel:
    """The broker side of one client connection (Kafka's ``KafkaChannel``), owned by network thread
    ``processor`` (its index in the ``SocketServer`` and the ``RequestChannel``)."""

    __slots__ = ("name", "processor", "muted", "pending", "readable", "send_response", "closed", "closing",
                 "on_reset")

    def __init__(self, name: str, processor: int, send_response: Callable[[RequestEnvelope], None]) -> None:
        self.name = name
        self.processor = processor
        self.muted = False
        # Requests that arrived but were not read yet (the socket receive buffer).
        self.pending: deque[RequestEnvelope] = deque()
        self.readable = False  # queued in the processor's readable list
        self.send_response = send_response
        # A closed channel drops its responses and unread requests; a closing one (the client closed it) is still
        # read until a response must be written; see SocketServer.close_channel.
        self.closed = False
        self.closing = False
        # The client's side of a reset connection (the broker process died): set by the client's Connection.
        self.on_reset: Callable[[], None] | None = None
