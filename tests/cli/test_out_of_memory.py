"""A run that runs out of memory ends with one clear line, a non-zero exit and the results up to then,
marked partial -- never a traceback. Fast: a subprocess with a low address-space limit (RLIMIT_AS)."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from kafkasim.record.result import RunResult

from .support import QUICKSTART, cli_env

# The run gets this much address space beyond what Python, pandas, pyarrow and the engine take before it
# starts (~400 MB here, measured below); the producers' backlog at 200 000 records/s fills it in seconds
# (9 M records in 45 s: under the 10 M a scenario may ask for, so validation lets the run start). Its
# buffer.memory is raised far beyond the machine: with Kafka's 32 MiB, send() would block (BufferPool)
# and bound the backlog instead.
HEADROOM_BYTES = 250 * 1024 * 1024
MEASURE = ("import kafkasim.run.engine, kafkasim.console.app, pandas.io.parquet, pyarrow.parquet\n"
           "print(next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmPeak')) * 1024)")

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS is enforced on Linux")


def _run_with_little_memory(out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**cli_env(), "OPENBLAS_NUM_THREADS": "1"}
    baseline = int(subprocess.run([sys.executable, "-c", MEASURE], capture_output=True, text=True, env=env,
                                  check=True, timeout=120).stdout)
    limit = baseline + HEADROOM_BYTES

    def limit_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return subprocess.run(
        [sys.executable, "-m", "kafkasim", "run", str(QUICKSTART), "--set", "producers[0].rate=200000/s",
         "--set", "producers[0].buffer.memory=64GiB",
         "--set", "duration=45s", "--out", str(out), *extra],
        capture_output=True, text=True, env=env, timeout=300, preexec_fn=limit_memory,
    )


def test_out_of_memory_ends_with_one_line_and_a_partial_result(tmp_path: Path) -> None:
    out = tmp_path / "result"
    done = _run_with_little_memory(out)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and "Traceback" not in done.stdout, done.stderr
    assert "MemoryError" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("kafkasim: out of memory at simulated time "), done.stderr
    assert "lower the producers' rate or the duration" in last
    assert f"partial results written to {out}" in last
    loaded = RunResult.load(out)
    stopped = loaded.summary["interrupted_at_ms"]
    assert 0 < stopped < 45_000.0
    assert loaded.summary["interrupted_by"] == "out of memory"
    assert loaded.summary["simulated_duration_ms"] == stopped
    assert len(loaded.requests) > 0 and loaded.requests["client_send_ms"].max() <= stopped
    info = json.loads((out / "run-info.json").read_text())
    assert info["partial"].startswith("out of memory at simulated time")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result"]  # no temporary directory left behind
