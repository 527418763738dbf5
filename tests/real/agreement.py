"""The differential suite's agreement table: one row per comparison, printed at the end of the session.

The suite runs in pytest-xdist workers: each row is also appended, as a JSON line, to the file that
``SPOOL_ENV`` names (tests/conftest.py sets it in the controlling process, whose terminal summary prints the
table from it).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

SPOOL_ENV = "KAFKASIM_AGREEMENT_SPOOL"


@dataclass
class Agreement:
    scenario: str
    what: str
    kafkasim: str
    kafka: str
    tolerance: str
    verdict: str


AGREEMENTS: list[Agreement] = []


def record(row: Agreement) -> None:
    AGREEMENTS.append(row)
    spool = os.environ.get(SPOOL_ENV)
    if spool:
        with open(spool, "a", encoding="utf-8") as out:
            out.write(json.dumps(asdict(row)) + "\n")


def recorded() -> list[Agreement]:
    """Every row of the session: from the spool when there is one (every worker's), else this process's."""
    spool = os.environ.get(SPOOL_ENV)
    if spool and Path(spool).is_file():
        lines = Path(spool).read_text(encoding="utf-8").splitlines()
        return [Agreement(**json.loads(line)) for line in lines if line.strip()]
    return list(AGREEMENTS)


def table(rows: list[Agreement] | None = None) -> str:
    lines = ["| scenario | what | kafkasim | Kafka 4.3.1 | tolerance | verdict |", "|---|---|---|---|---|---|"]
    lines += [f"| {a.scenario} | {a.what} | {a.kafkasim} | {a.kafka} | {a.tolerance} | {a.verdict} |"
              for a in (recorded() if rows is None else rows)]
    return "\n".join(lines)
