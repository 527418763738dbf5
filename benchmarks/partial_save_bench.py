"""What saving the partial result of a run that ran out of memory costs, by the number of request rows.

Issue 26, item 5: an idle 3-broker cluster with `replica.fetch.wait.max.ms: 0` ran out of memory after
~8 M request rows, and writing its partial result took 22 s and 4.4 GB (then, under a tighter limit, was
lost). This follows that path in a fresh process per row count: the idle cluster (an hour of it: a day is
refused now, for its ~140 M request rows) runs for a simulated
second, its recorder is given `--rows` more request rows (copies of the run's own FetchFollower rows with
new ids and later times; they are spooled to Parquet as a run's would be), then the simulation loop raises
MemoryError as the address-space guard does. Measured from there to the end of `kafkasim run`'s
out-of-memory handling (`Engine._out_of_memory`: the tables read back from the spool and the summary;
`run_command._out_of_memory`: the result written): wall and CPU seconds (the process's: on a shared machine
the steadier of the two) and the process's peak RSS above its RSS just before (`/proc/self/clear_refs` resets
the peak).

    uv run python benchmarks/partial_save_bench.py --rows 1000000,4000000

To compare two checkouts in one session, run it once per checkout against pure-Python copies (the path is
pandas and Arrow, not the compiled core): `benchmarks/pure.py` for this checkout, and for another
`PYTHONPATH=<export of its kafkasim/ without *.so> uv run python benchmarks/partial_save_bench.py ...`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SCENARIO = """
name: idle-cluster
description: an idle cluster whose followers' fetches are answered at once
duration: 1h
sample_interval: 10s
cluster: {brokers: 3}
broker: {replica.fetch.wait.max.ms: 0}
topics: [{name: t, partitions: 1, replication.factor: 3}]
"""
WARM_MS = 1_000.0
TIMESTAMPS = ("intended_ms", "client_send_ms", "start_ms", "dequeue_ms", "local_complete_ms",
              "response_complete_ms", "response_dequeue_ms", "end_ms", "client_receive_ms")


class _Row:
    __slots__ = ("request_id", "api", "client", "broker", "partitions", "response_partitions", "request_bytes",
                 "response_bytes", "acks", "error", "client_timeout", *TIMESTAMPS)


def _rss_bytes(field: str) -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(field + ":"))


def measure(rows: int) -> dict[str, Any]:
    """In this process (a fresh one): the run, the extra rows, then the out-of-memory path, measured."""
    from kafkasim.record.arrow_allocator import prefer_system_allocator

    prefer_system_allocator()  # as kafkasim.console.app.main does
    from kafkasim.console import run_command
    from kafkasim.run.engine import Engine, SimulationOutOfMemory
    from kafkasim.scenario import load_scenario

    run_command._load_writers()
    engine: Engine | None = None
    fed: dict[str, Any] = {"rows": 0}

    def feed_then_fail(now_ms: float, _duration_ms: float) -> None:
        if now_ms < WARM_MS:
            return
        assert engine is not None
        recorder = engine.recorder
        template = list(engine.recorder._finished_requests)  # the run's own rows, still in the buffer
        template = [r for r in template if r.api == "FetchFollower"] or template
        next_id = 1 + max(r.request_id for r in template)
        for i in range(rows):
            source = template[i % len(template)]
            row = _Row()
            shift = now_ms * (1 + i // len(template))
            for name in _Row.__slots__:
                setattr(row, name, getattr(source, name))
            for name in TIMESTAMPS:
                setattr(row, name, getattr(source, name) + shift)
            row.request_id = next_id + i
            recorder.finish_request(row)
        fed["rows"] = rows
        import gc

        gc.collect()
        with open("/proc/self/clear_refs", "w") as f:  # peak RSS := current RSS
            f.write("5")
        fed["rss"] = _rss_bytes("VmRSS")
        fed["start"] = time.perf_counter()
        fed["cpu"] = time.process_time()
        raise MemoryError("address space nearly exhausted")  # as Engine._run_until does for its guard

    scenario = load_scenario(SCENARIO)
    engine = Engine(scenario, progress=feed_then_fail)
    with tempfile.TemporaryDirectory(prefix="partial-save-") as scratch:
        out = Path(scratch) / "result"
        try:
            engine.run()
        except SimulationOutOfMemory as exc:
            code = run_command._out_of_memory(exc, out)
            seconds = time.perf_counter() - fed["start"]
            cpu = time.process_time() - fed["cpu"]
        else:
            raise AssertionError("the run did not end as out of memory")
        saved = (out / "requests.parquet").is_file()
    return {"rows": fed["rows"], "exit": code, "saved": saved, "seconds": round(seconds, 2), "cpu": round(cpu, 2),
            "peak_above_mb": round((_rss_bytes("VmHWM") - fed["rss"]) / 2**20)}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="1000000,4000000", help="comma-separated extra request rows")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        print(json.dumps(measure(args.child)))
        return 0
    from kafkasim.compiled import describe

    print(f"kafkasim: {describe()}")
    print("| request rows | written | wall s (tabulate + write) | CPU s | peak RSS above the loop's, MB |")
    print("|---|---|---|---|---|")
    for n in (int(x) for x in args.rows.split(",")):
        done = subprocess.run([sys.executable, __file__, "--child", str(n)], capture_output=True, text=True,
                              env={**os.environ, "OPENBLAS_NUM_THREADS": "1"}, check=False)
        if done.returncode != 0:
            print(done.stderr[-2000:], file=sys.stderr)
            return done.returncode
        m = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"| {m['rows']:,} | {'yes' if m['saved'] else 'no'} | {m['seconds']} | {m['cpu']} | "
              f"{m['peak_above_mb']:,} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
