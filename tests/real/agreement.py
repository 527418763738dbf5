"""The differential suite's agreement table: one row per comparison, printed at the end of the session."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Agreement:
    scenario: str
    what: str
    kafkasim: str
    kafka: str
    tolerance: str
    verdict: str


AGREEMENTS: list[Agreement] = []


def table() -> str:
    lines = ["| scenario | what | kafkasim | Kafka 4.3.1 | tolerance | verdict |", "|---|---|---|---|---|---|"]
    lines += [f"| {a.scenario} | {a.what} | {a.kafkasim} | {a.kafka} | {a.tolerance} | {a.verdict} |"
              for a in AGREEMENTS]
    return "\n".join(lines)
