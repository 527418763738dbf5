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
    # What filled the memory is named from what the run held, not assumed (issue 26, item 5).
    assert " records in the producers and " in last and "batches in the logs: most of it the records in the producers " \
        "(lower the producers' rates, which the brokers do not keep up with, or their buffer.memory" in last, last
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


class _NoRoomForTheEighthSpool:
    """A guard with room for the run, and for seven spool writes but not the eighth."""

    def __init__(self) -> None:
        self.spools = 0

    def exhausted(self) -> bool:
        return False

    def before_spool(self) -> None:
        self.spools += 1
        if self.spools == 8:
            raise MemoryError("address space nearly exhausted (no room for a spool write)")


def test_the_message_names_what_filled_the_memory_in_a_run_without_producers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # Issue 26, item 5: "lower the producers' rate" in a scenario without producers. The followers here fetch
    # from an idle leader without a wait: request rows pile up.
    from kafkasim.run import engine as engine_module

    from .support import call

    guard = _NoRoomForTheEighthSpool()
    monkeypatch.setattr(engine_module.AddressSpaceGuard, "from_process_limit", classmethod(lambda cls: guard))
    monkeypatch.setattr(engine_module, "MAX_ROWS_IN_MEMORY", 10)
    out = tmp_path / "result"
    code = call("run", QUICKSTART, "--set", "producers=[]", "--set", "consumers=[]", "--set", "duration=5s",
                "--set", "broker.replica.fetch.wait.max.ms=0", "--out", out)
    assert code == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("kafkasim: out of memory at simulated time "), last
    assert " request rows and " in last and "most of it the request rows (a shorter duration, longer fetch waits" in last
    assert "producer" not in last, last
    assert last.endswith(f"partial results written to {out}"), last
    assert RunResult.load(out).summary["interrupted_by"] == "out of memory"


def test_out_of_memory_drawing_the_figures_still_writes_the_results(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # Issue 26, item 5 (keep the results when memory runs out while saving): the figures are what saving needs
    # most memory for beside the tables; without them the results fit, and are written.
    import kafkasim.report

    from .support import call

    def no_memory_for_figures(*args: object, **kwargs: object) -> None:
        raise MemoryError("matplotlib")

    monkeypatch.setattr(kafkasim.report, "write_figures", no_memory_for_figures)
    out = tmp_path / "result"
    code = call("run", QUICKSTART, "--set", "duration=1s", "--set", "warmup=0s", "--figures", "--out", out)
    assert code == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith(f"kafkasim: out of memory writing the results; results written to {out} without "
                           "figures (no memory left to draw them; "), last
    assert "kafkasim report" in last
    loaded = RunResult.load(out)
    assert len(loaded.requests) > 0 and not (out / "figures").exists()
