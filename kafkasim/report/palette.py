"""One palette for every kafkasim figure, so a colour means the same thing on every page.

Okabe-Ito colours (distinguishable with the common colour-vision deficiencies). An API keeps its colour
everywhere: the latency CDF, the histograms, the breakdown's axis labels, and the swimlane's lanes.
A ``RequestMetrics`` phase keeps its colour in the stacked breakdown and in the swimlane.
"""

from __future__ import annotations

from typing import Final

BLACK: Final = "#000000"
ORANGE: Final = "#E69F00"
SKY_BLUE: Final = "#56B4E9"
GREEN: Final = "#009E73"
YELLOW: Final = "#F0E442"
BLUE: Final = "#0072B2"
VERMILLION: Final = "#D55E00"
PURPLE: Final = "#CC79A7"
GREY: Final = "#7F7F7F"
LIGHT_GREY: Final = "#D9D9D9"

# The three request kinds a run records (ARCHITECTURE.md, "Data that flows out of a run").
API_ORDER: Final = ("Produce", "FetchConsumer", "FetchFollower")
API_COLOURS: Final = {"Produce": BLUE, "FetchConsumer": GREEN, "FetchFollower": ORANGE}

# Produce latency per acks shares the Produce colour and differs by line style, so "produce" reads
# as one family; end-to-end latency (produce -> first consumer) gets its own colour.
ACKS_LINESTYLES: Final = {-1: "-", 1: "--", 0: ":"}
END_TO_END_COLOUR: Final = PURPLE

# Kafka's RequestMetrics phases in the order a request lives through them.
PHASES: Final = ("RequestQueueTimeMs", "LocalTimeMs", "RemoteTimeMs", "ResponseQueueTimeMs", "ResponseSendTimeMs")
PHASE_COLOURS: Final = {
    "RequestQueueTimeMs": SKY_BLUE,
    "LocalTimeMs": BLUE,
    "RemoteTimeMs": ORANGE,
    "ResponseQueueTimeMs": YELLOW,
    "ResponseSendTimeMs": GREEN,
}
# Short names for legends and swimlane labels: the metric name without the "TimeMs" suffix.
PHASE_LABELS: Final = {
    "RequestQueueTimeMs": "RequestQueue",
    "LocalTimeMs": "Local",
    "RemoteTimeMs": "Remote",
    "ResponseQueueTimeMs": "ResponseQueue",
    "ResponseSendTimeMs": "ResponseSend",
}
NETWORK_COLOUR: Final = LIGHT_GREY
CLIENT_WAIT_COLOUR: Final = "#F2F2F2"

# Replication figures: the high watermark is the line everything else is measured against.
HIGH_WATERMARK_COLOUR: Final = BLACK
REPLICA_COLOURS: Final = (BLUE, ORANGE, GREEN, VERMILLION, SKY_BLUE, PURPLE, YELLOW, GREY)
PURGATORY_COLOURS: Final = {"Produce": BLUE, "Fetch": GREEN}
WARMUP_COLOUR: Final = GREY
# Marks on every time axis: a fault's window, and the moments the ISR shrank or grew.
FAULT_COLOUR: Final = VERMILLION
ISR_SHRINK_COLOUR: Final = PURPLE
ISR_EXPAND_COLOUR: Final = GREEN
# The min.insync.replicas level on the ISR figure.
MIN_ISR_COLOUR: Final = VERMILLION
OFFLINE_COLOUR: Final = BLACK
# Partitions with eligible leader replicas (KIP-966) on the aggregated ISR figure.
ELR_COLOUR: Final = SKY_BLUE


def api_colour(api: str) -> str:
    """The API's colour; an API outside the three known ones is drawn grey rather than failing."""
    return API_COLOURS.get(api, GREY)


def replica_colour(index: int) -> str:
    return REPLICA_COLOURS[index % len(REPLICA_COLOURS)]
