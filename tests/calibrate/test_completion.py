"""The completion cost read off a request log (kafkasim.calibrate.completion): how long after an acks=1 produce's
response the broker answered the first parked follower fetch its append woke (the fit's first guess), and how much
longer a follower fetch takes when its high-watermark advance completes a parked consumer fetch."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from kafkasim.calibrate.completion import (
    MIN_GAPS,
    completion_gaps,
    consumer_completion_ms,
    consumer_completions,
    follower_update_ms,
    follower_updates,
)
from kafkasim.calibrate.fit import starting_point
from kafkasim.calibrate.held_out import HELD_OUT
from kafkasim.calibrate.parameters import BY_NAME
from kafkasim.calibrate.preset import PresetError, earlier_fit
from kafkasim.calibrate.targets import measured, targets, with_request_log
from kafkasim.run import run_scenario
from kafkasim.scenario import load_scenario, with_overrides
from tests.scripts import load_script

from .test_fit import SCENARIO

ROOT = Path(__file__).resolve().parents[2]


def _log(rows: list[tuple[str, int, int | None, float, float, float]]) -> pd.DataFrame:
    log = pd.DataFrame(rows, columns=["api", "broker", "acks", "local_complete_ms", "response_complete_ms",
                                      "RemoteTimeMs"]).astype({"acks": "Int64"})
    log["end_ms"] = log["response_complete_ms"] + 0.123  # sent a little after: not on a whole millisecond
    return log


def _as_a_whole_millisecond_log(requests: pd.DataFrame) -> pd.DataFrame:
    """The rows as a request log written with ``%d{UNIX_MILLIS}`` would give them: each row's times moved so
    its end (the line's time) is floored to the millisecond, its breakdown kept (kafkasim.real.request_log)."""
    shift = np.floor(requests["end_ms"]) - requests["end_ms"]
    moved = requests.copy()
    for column in ("start_ms", "dequeue_ms", "local_complete_ms", "response_complete_ms", "response_dequeue_ms",
                   "end_ms"):
        moved[column] = requests[column] + shift
    return moved


def test_the_gap_is_from_an_acks_one_response_to_the_next_parked_follower_answered_by_its_broker() -> None:
    log = _log([
        ("Produce", 0, 1, 10.0, 10.0, 0.0),
        ("FetchFollower", 0, None, 2.0, 10.4, 8.4),  # woken by the produce: 0.4 ms after its response
        ("FetchFollower", 0, None, 3.0, 10.9, 7.9),  # the second follower: not the first answer
        ("FetchFollower", 1, None, 2.0, 10.1, 8.1),  # another broker's follower
        ("FetchFollower", 0, None, 10.2, 10.2, 0.0),  # answered at once, not parked
        ("Produce", 0, -1, 20.0, 21.0, 1.0),  # acks=all: its local phase includes the completions
        ("FetchFollower", 0, None, 12.0, 20.7, 8.7),
        ("Produce", 0, 1, 30.0, 30.0, 0.0),
        ("FetchFollower", 0, None, 31.0, 36.0, 5.0),  # 6 ms later: woken by something else
    ])
    assert completion_gaps(log).tolist() == pytest.approx([0.4])
    assert completion_gaps(log.drop(columns=["RemoteTimeMs"])).size == 0  # a log without the column


def test_a_simulated_runs_gap_is_its_completion_cost_and_the_fit_starts_from_a_consumers() -> None:
    """A constant completion cost of 0.4 ms: the first follower is answered that long (plus the read of one 1 KiB
    batch at 0.002 ms per KiB) after each acks=1 produce's response. The fit's first guess is the consumer
    completion (the same here); the gap itself is no fit target: on a real broker of shared cores it holds the
    handler's wait for a core, and fitted it doubled every handler cost (docs/calibration.md)."""
    scenario = load_scenario(SCENARIO)
    result = run_scenario(with_overrides(scenario, ["broker.costs.complete_fetch=0.4ms"]))
    gaps = completion_gaps(result.requests)
    assert len(gaps) >= MIN_GAPS
    assert float(np.median(gaps)) == pytest.approx(0.4 + 0.002 * (1024 + 70) / 1024, abs=0.01)
    summary = measured([result.summary])
    assert starting_point(summary)["complete_fetch_ms"] == BY_NAME["complete_fetch_ms"].start
    guess = starting_point(summary, [result.requests])["complete_fetch_ms"]
    assert math.isclose(guess, consumer_completion_ms([result.requests]) or math.nan)
    assert math.isclose(guess, float(np.median(gaps)), abs_tol=0.01)
    fitted = {t.key for t in targets(with_request_log(result.summary, result.requests))}
    assert "consumer completion p50" in fitted and "completion gap p50" not in fitted
    # Written in whole milliseconds, the same run's times are each off by up to 1 ms, and the first answer
    # after a response is often a later one: no gap is read off such a log, and the fit starts from the default.
    whole = _as_a_whole_millisecond_log(result.requests)
    assert completion_gaps(whole).size == 0
    assert starting_point(summary, [whole])["complete_fetch_ms"] == BY_NAME["complete_fetch_ms"].start
    assert completion_gaps(result.requests.drop(columns=["end_ms"])).size == 0


def test_the_follower_update_is_a_parked_follower_fetchs_work_beyond_a_parked_consumer_fetchs() -> None:
    """A follower cost of 0.3 ms (Partition.updateFollowerFetchState) and a completion cost of 0.4: a follower
    fetch that parked and completed no consumer's takes 0.3 ms longer than a parked consumer fetch, one that
    completed a consumer's 0.7 longer (left out: the p50 of the two kinds together is neither). The fit starts
    `follower_fetch_ms` from it, and whole-millisecond times give none (which follower fetch completed a
    consumer's is then unknown)."""
    scenario = load_scenario(SCENARIO)
    result = run_scenario(with_overrides(scenario, ["broker.costs.follower_fetch=0.3ms",
                                                    "broker.costs.complete_fetch=0.4ms"]))
    updates = follower_updates(result.requests)
    assert len(updates) >= MIN_GAPS
    assert float(np.median(updates)) == pytest.approx(0.3, abs=0.005)
    assert follower_update_ms([result.requests]) == pytest.approx(float(np.median(updates)))
    summary = measured([result.summary])
    assert starting_point(summary, [result.requests])["follower_fetch_ms"] == pytest.approx(0.3, abs=0.005)
    assert "follower update p50" in {t.key for t in targets(with_request_log(result.summary, result.requests))}
    whole = _as_a_whole_millisecond_log(result.requests)
    assert follower_updates(whole).size == 0
    assert follower_update_ms([whole]) is None
    assert follower_updates(result.requests.drop(columns=["dequeue_ms"])).size == 0


def test_a_refit_starts_from_an_earlier_presets_values_and_first_guesses_what_it_lacks(tmp_path: Path) -> None:
    """docs/make_calibration.py --start: a preset written before complete_fetch_ms existed still gives every value
    it has (clipped to today's bounds); a file that is no preset is refused."""
    older = tmp_path / "older.yaml"
    older.write_text(
        "kind: kafkasim fitted preset\n"
        "parameters:\n"
        "  request_ms: {value: 0.08, unit: ms}\n"
        "  send_ms: {value: 1000.0, unit: ms}\n"
        "  wakeup_median_ms: {value: soon}\n", encoding="utf-8")
    assert earlier_fit(older) == ({"request_ms": 0.08, "send_ms": BY_NAME["send_ms"].high}, "at an unknown time")
    older.write_text(older.read_text(encoding="utf-8") + "fitted: {when: '2026-11-29T23:03:21Z'}\n", encoding="utf-8")
    assert earlier_fit(older)[1] == "2026-11-29T23:03:21Z"
    # One written before broker.costs.handler_wakeup drew the handlers' wake-up from wakeup's spread.
    older.write_text("kind: kafkasim fitted preset\nparameters:\n  wakeup_spread: {value: 37.5}\n", encoding="utf-8")
    values, _ = earlier_fit(older)
    assert values["handler_wakeup_spread"] == values["wakeup_spread"] == 37.5
    notes = tmp_path / "notes.yaml"
    notes.write_text("parameters: {}\n", encoding="utf-8")
    with pytest.raises(PresetError, match="not a fitted preset"):
        earlier_fit(notes)


def test_make_calibration_refuses_a_start_that_is_no_preset_before_any_real_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = _make_calibration()
    notes = tmp_path / "notes.yaml"
    notes.write_text("my notes\n", encoding="utf-8")
    work = tmp_path / "work"
    assert script.main(["--start", str(notes), "--work", str(work)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"make_calibration.py: error: --start {notes}: kind: not a fitted preset") and "Traceback" not in err
    assert not work.exists()  # refused before the real runs


class _Made(Exception):
    """Stops make_calibration.py once its real runs are made."""


def test_make_calibration_makes_the_real_runs_in_rounds(tmp_path: Path) -> None:
    """One run of each configuration per round, not each configuration's runs in a block: over one sequence of
    twelve real runs made in blocks, a handler's wake-up p50 went from 0.03 to 0.06 ms, and the blocks gave each
    configuration its own share of the machine's drift."""
    script = _make_calibration()
    made: list[str] = []

    def real_run(key: str, overrides: list[str], out: Path, most: float, attempts: int) -> tuple[object, list]:
        made.append(out.name)
        # Each run is a quiet one (kafkasim.calibrate.quiet_runs), by the options' limits.
        assert (most, attempts) == (0.05, 3)
        if len(made) == 2 * (len(HELD_OUT) + 1):
            raise _Made
        return _Quiet(), []

    script.real_run = real_run
    with pytest.raises(_Made):
        script.main(["--work", str(tmp_path), "--runs", "2", "--base-runs", "2"])
    keys = ["base", *HELD_OUT]
    assert made == [f"{key}-{i}" for i in (1, 2) for key in keys]


class _Quiet:
    run_info: dict[str, object] = {"machine_cpu": {"run": 0.5, "other": 0.01, "idle": 0.49, "steal": 0.0}}


@pytest.mark.parametrize(("argv", "said"), [(["--max-foreign", "1.5"], "--max-foreign 1.5: allowed: a share"),
                                            (["--attempts", "0"], "--attempts 0: allowed: 1 or more")])
def test_make_calibration_refuses_a_limit_of_its_quiet_runs_that_cannot_be(
        argv: list[str], said: str, capsys: pytest.CaptureFixture[str]) -> None:
    script = _make_calibration()
    with pytest.raises(SystemExit) as exited:
        script.main(argv)
    assert exited.value.code == 2 and said in capsys.readouterr().err


def _follower_log(completing: int, idle: int) -> pd.DataFrame:
    """Follower fetches answered at once: `completing` of them (LocalTimeMs 0.5) each complete a parked consumer
    fetch (its response sent 0.3 ms after the follower's dequeue), `idle` of them (0.2) complete none."""
    rows = []
    for i in range(completing + idle):
        start = 10.0 * i + 0.125
        local = 0.5 if i < completing else 0.2
        rows.append(("FetchFollower", 0, 1, start, start + local, start + local, 0.0))
        if i < completing:
            rows.append(("FetchConsumer", 0, 1, start - 4.0, start - 3.9, start + 0.3, 4.2))
    rows.append(("FetchConsumer", 0, 1, 5000.0, 5000.1, 5003.0, 2.9))  # answered by nothing here
    rows.append(("FetchFollower", 0, 0, 6000.0, 6000.9, 6000.9, 0.0))  # named nothing: not counted
    rows.append(("FetchFollower", 1, 1, 6000.125, 6000.825, 6000.825, 0.0))  # completed nothing at broker 1
    log = pd.DataFrame(rows, columns=["api", "broker", "partitions", "dequeue_ms", "local_complete_ms",
                                      "response_complete_ms", "RemoteTimeMs"])
    log["end_ms"] = log["response_complete_ms"] + 0.123
    return log


def test_a_consumer_completion_is_what_it_adds_to_the_follower_fetch_that_made_it() -> None:
    log = _follower_log(MIN_GAPS, MIN_GAPS)
    got = consumer_completions(log)
    assert len(got) == MIN_GAPS and got.tolist() == pytest.approx([0.3] * MIN_GAPS)
    assert consumer_completions(_follower_log(MIN_GAPS - 1, MIN_GAPS)).size == 0  # too few to say
    assert consumer_completions(log.drop(columns=["dequeue_ms"])).size == 0
    assert consumer_completions(_as_a_whole_millisecond_log(log.assign(start_ms=log["dequeue_ms"],
                                                                        response_dequeue_ms=log["end_ms"]))).size == 0


def test_a_simulated_consumer_completion_is_the_completion_cost() -> None:
    """A constant completion cost of 0.4 ms: a follower fetch whose high-watermark advance completes the
    consumer's parked fetch holds its handler that much longer, plus the consumer's read of one 1 KiB batch."""
    result = run_scenario(with_overrides(load_scenario(SCENARIO), ["broker.costs.complete_fetch=0.4ms"]))
    got = consumer_completions(result.requests)
    assert len(got) >= MIN_GAPS
    assert float(np.median(got)) == pytest.approx(0.4 + 0.002 * (1024 + 70) / 1024, abs=0.01)


def test_make_calibration_check_predicts_new_runs_of_the_held_out_configurations_with_the_committed_preset(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--check`: quiet real runs of the held-out configurations only (none of the base, no fit), in rounds, and
    the committed preset's predictions beside them, kept in calibration.json's `check` beside the fit's own."""
    script = _make_calibration()
    made: list[str] = []
    written: list[dict] = []

    def real_run(key: str, overrides: list[str], out: Path, most: float, attempts: int) -> tuple[object, list]:
        made.append(out.name)
        return _Quiet(), []

    def held_out_rows(_preset: object, real: dict[str, list[dict[str, float]]], *_simulated: float,
                      ) -> list[dict[str, object]]:
        assert sorted(real) == sorted(HELD_OUT) and all(len(runs) == 2 for runs in real.values())
        return [{"configuration": HELD_OUT[key][0], "statistic": "end to end p99", "predicted": 20.0,
                 "band": [18.0, 30.0], "real_median": 19.0, "real_runs": [19.0, 21.0], "verdict": "within"}
                for key in real]

    monkeypatch.setattr(script, "real_run", real_run)
    monkeypatch.setattr(script, "held_out_rows", held_out_rows)
    monkeypatch.setattr(script, "statistics_of", lambda runs: [{"end to end p99": 19.0} for _r in runs])
    monkeypatch.setattr(script, "write_pages", written.append)
    assert script.main(["--check", "--work", str(tmp_path), "--runs", "2"]) == 0
    assert made == [f"{key}-{i}" for i in (1, 2) for key in HELD_OUT]
    committed = json.loads((ROOT / "docs" / "calibration.json").read_text())
    (data,) = written
    assert data["fit"] == committed["fit"] and data["predictions"] == committed["predictions"]
    assert data["check"]["runs"] == 2 and len(data["check"]["predictions"]) == len(HELD_OUT)
    assert data["check"]["quiet"] == {"max_foreign": 0.05, "attempts": 3, "set_aside": [], "kept_loaded": []}


def test_make_calibration_check_refuses_a_start(capsys: pytest.CaptureFixture[str]) -> None:
    script = _make_calibration()
    with pytest.raises(SystemExit) as exited:
        script.main(["--check", "--start", "presets/this-machine.yaml"])
    assert exited.value.code == 2 and "--check makes no fit: --start does not apply" in capsys.readouterr().err


def test_make_calibration_check_refuses_a_calibrations_directory(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Its held-out runs have the names a check gives its own: the check would reuse them as new."""
    (tmp_path / "base-1").mkdir()
    with pytest.raises(SystemExit) as exited:
        _make_calibration().main(["--check", "--work", str(tmp_path)])
    assert exited.value.code == 2 and "holds a calibration's runs (base-1)" in capsys.readouterr().err


def _make_calibration() -> Any:
    return load_script(ROOT / "docs" / "make_calibration.py")
