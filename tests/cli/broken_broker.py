"""The kafkasim command line with a deliberately broken broker, for the CLI's invariant-violation test.

    python tests/cli/broken_broker.py run SCENARIO ...

ReplicaManager.append_records answers every produce request twice, which Kafka never does
(DelayedOperation.forceComplete: exactly-once completion); the engine's invariant checks must stop the run
and the CLI must exit 1 with the violation's message. The product is untouched: the break lives only in this test script.
"""

from __future__ import annotations

import sys
from typing import Any

from kafkasim.broker.replica_manager import ReplicaManager
from kafkasim.console.app import main

_original = ReplicaManager.append_records


def _answer_twice(self: ReplicaManager, timeout_ms: int, acks: int, entries: Any, callback: Any) -> None:
    def twice(statuses: Any) -> None:
        callback(statuses)
        callback(statuses)

    _original(self, timeout_ms, acks, entries, twice)


ReplicaManager.append_records = _answer_twice  # type: ignore[method-assign,assignment]

if __name__ == "__main__":
    main(sys.argv[1:])
