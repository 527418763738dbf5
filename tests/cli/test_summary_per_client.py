"""`kafkasim run` prints each producer's and each consumer's own rows (summary per_client), in 80 columns."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console

from kafkasim.console.format import count, ms
from kafkasim.console.summary import print_summary
from kafkasim.run import Engine
from kafkasim.scenario import load_scenario, with_overrides

from .support import QUICKSTART, REPO, call

STATS = ("p50", "p95", "p99", "p99.9", "max")


@pytest.fixture(autouse=True)
def _terminal_width(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")


def _cells(stats: dict) -> list[str]:
    return [count(stats["count"]), *(ms(stats[s]) for s in STATS)]


def _rows_after(lines: list[str], heading: str) -> list[list[str]]:
    """The label-less cells of the rows after the line that starts with `heading` (a client's name)."""
    start = next(i for i, line in enumerate(lines) if line.strip().startswith(heading))
    return [line.split() for line in lines[start + 1:]]


def _run(tmp_path: Path, capsys: pytest.CaptureFixture[str], scenario: str, *overrides: str) -> tuple[str, dict]:
    out = tmp_path / scenario
    sets = [arg for o in overrides for arg in ("--set", o)]
    assert call("run", REPO / "scenarios" / f"{scenario}.yaml", *sets, "--no-figures", "--out", out) == 0
    printed = capsys.readouterr().out
    # Every line fits but the last two, which name the (long, temporary) result directory.
    assert printed.splitlines()[-2].startswith("results: ")
    assert printed.splitlines()[-1].startswith("figures and report.html: ")
    assert max(len(line) for line in printed.splitlines()[:-2]) <= 80
    assert "\u2026" not in printed, printed  # nothing cut
    return printed, json.loads((out / "summary.json").read_text())


def test_run_prints_a_row_per_producer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    printed, summary = _run(tmp_path, capsys, "acks_compared", "duration=3s", "warmup=1s")
    lines = printed.splitlines()
    assert any(line.startswith("Per producer (ms)") for line in lines)
    producers = summary["per_client"]["producers"]
    assert list(producers) == ["acks-0", "acks-1", "acks-all"]  # the scenario's order
    for name, data in producers.items():
        rows = _rows_after(lines, f"{name}, {data['acks']}")
        assert rows[0] == ["intended", *_cells(data["from_intended"])]
        assert rows[1] == ["sent", *_cells(data["from_send"])]
        assert rows[2] == ["end", "to", "end", *_cells(data["e2e"])]
    assert "Per consumer" not in printed  # one consumer: the FetchConsumer table is its row
    assert "Failed requests per client" not in printed


def test_run_prints_a_row_per_consumer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    printed, summary = _run(tmp_path, capsys, "fetch_min_bytes_vs_max_wait", "duration=3s", "warmup=1s")
    lines = printed.splitlines()
    consumers = summary["per_client"]["consumers"]
    assert list(consumers) == ["eager", "batched", "starved"]
    for name, data in consumers.items():
        rows = _rows_after(lines, name)
        assert rows[0] == ["end", "to", "end", *_cells(data["e2e"])]
        assert rows[1] == ["fetch", "RemoteTimeMs", *_cells(data["broker"]["RemoteTimeMs"])]
    assert "Per producer" not in printed


def test_one_producer_and_one_consumer_print_no_per_client_table(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    printed, summary = _run(tmp_path, capsys, QUICKSTART.stem, "duration=1s", "warmup=0s")
    assert list(summary["per_client"]["producers"]) == ["producer-1"]
    assert "Per producer" not in printed and "Per consumer" not in printed


def test_failed_requests_are_listed_per_client_by_error_name() -> None:
    scenario = with_overrides(load_scenario(REPO / "scenarios" / "gc_paused_follower.yaml"), ["duration=17s"])
    summary = Engine(scenario).run().summary
    errors = summary["per_client"]["producers"]["orders-acks-all"]["errors"]
    assert errors.get("REQUEST_TIMED_OUT", 0) > 0  # the 5 s request timeout, during the 12 s pause at 10 s
    assert summary["per_client"]["producers"]["metrics-acks-1"]["errors"] == {}
    buffer = StringIO()
    print_summary(Console(file=buffer, width=80, no_color=True), summary, scenario.name)
    lines = [line.rstrip() for line in buffer.getvalue().splitlines()]
    at = lines.index("Failed requests per client")
    listed = ", ".join(f"{n:,} {name}" for name, n in errors.items())
    timeouts = summary["per_client"]["producers"]["orders-acks-all"]["client_timeouts"]
    assert lines[at + 1].split(None, 1) == ["orders-acks-all", f"{listed}, {timeouts:,} client timeouts"]


def test_the_delivery_table_lists_producers_with_retries_failures_or_duplicates() -> None:
    summary = {"per_client": {"producers": {
        "quiet": {"outcomes": {"acknowledged": 10}, "attempts": {"1": 10}},
        "retried": {"outcomes": {"acknowledged": 9, "failed": 1}, "attempts": {"1": 7, "2": 2, "31": 1}},
    }}}
    console = Console(file=StringIO(), width=80)
    print_summary(console, summary, "s")
    printed = console.file.getvalue()  # type: ignore[attr-defined]
    lines = printed.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Producer delivery"))
    assert lines[start + 1].split() == ["retried", "9", "acknowledged,", "1", "failed,", "attempts", "1:", "7,", "2:",
                                        "2,", "31:", "1"]
    assert lines[start + 2].strip() == ""  # "quiet" (every batch acknowledged first time) is not listed
    # Nothing retried, failed or duplicated: no table.
    console = Console(file=StringIO(), width=80)
    print_summary(console, {"per_client": {"producers": {"quiet": summary["per_client"]["producers"]["quiet"]}}}, "s")
    assert "Producer delivery" not in console.file.getvalue()  # type: ignore[attr-defined]


def test_run_prints_the_acknowledged_batches_lost_per_producer_only_when_some_were(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    printed, summary = _run(tmp_path, capsys, "unclean_election_loses_acks1", "duration=40s")
    lost = summary["lost_after_ack"]["by_producer"]["orders-acks-1"]
    assert lost["by_reason"] == {"acks=1, leader from the ELR": lost["batches"]}
    lines = [line.rstrip() for line in printed.splitlines()]
    start = lines.index("Acknowledged, then lost (batches)")
    assert lines[start + 1].split() == ["orders-acks-1", count(lost["batches"]), f"({count(lost['records'])}",
                                        "records):", count(lost["batches"]), "acks=1,", "leader", "from", "the", "ELR"]
    # The quiet case has no table of losses, and its outcomes line says there were none.
    printed, summary = _run(tmp_path, capsys, "acks_compared", "duration=2s", "warmup=1s")
    assert "lost_after_ack" not in summary and "Acknowledged, then lost" not in printed
    assert "0 acknowledged then lost" in " ".join(printed.split())
