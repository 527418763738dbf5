"""`kafkasim calibrate` and `kafkasim run --preset` as a user runs them: the preset written and used, and every
bad input a one-line message with exit 2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from kafkasim.calibrate.parameters import PARAMETERS, min_evaluations, overrides
from kafkasim.calibrate.preset import HEADER, KIND, PresetError, applied, load_preset
from kafkasim.record.result import RunResult
from kafkasim.scenario import load_scenario
from tests.cli.support import QUICKSTART, SHORT, assert_no_traceback, call, kafkasim

FEWEST = min_evaluations(len(PARAMETERS))
FAST = ["--sim-duration", "1s", "--max-evaluations", str(FEWEST)]  # the fewest that take a step


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("calibrate") / "measured"
    assert call("run", QUICKSTART, *SHORT, "--out", out, "--no-progress") == 0
    return out


@pytest.fixture(scope="module")
def again(measured: Path) -> Path:
    """A second run of the same scenario (a copy: its medians with the first are the first's statistics)."""
    out = measured.parent / "again"
    shutil.copytree(measured, out)
    # As a real run on a shared machine records it (kafkasim.real.machine_cpu): the fit says so.
    info = json.loads((out / "run-info.json").read_text())
    info["machine_cpu"] = {"run": 0.5, "other": 0.12, "idle": 0.38, "steal": 0.08}
    # And its brokers' GC logs, as a real run keeps them (kafkasim.real.gc_log): six pauses of the leader after the
    # warm-up, from which the fit's brokers collect (kafkasim.calibrate.collector).
    info |= {"engine": "kafka", "epoch_ms_at_0": 1_700_000_000_000}
    (out / "run-info.json").write_text(json.dumps(info))
    for broker in RunResult.load(out).requests["broker"].unique():
        (out / "kafka" / f"broker-{broker}").mkdir(parents=True)
        (out / "kafka" / f"broker-{broker}" / "gc-7.log").write_text("".join(
            f"[{1_700_000_000_000 + 600 + 200 * i + 3}ms] GC({i}) Pause Young (Allocation Failure) 9M->2M(30M) "
            f"{3 + i / 10:.3f}ms\n" for i in range(6)))
    return out


@pytest.fixture(scope="module")
def preset(measured: Path, again: Path) -> Path:
    path = measured.parent / "fitted.yaml"
    done = kafkasim("calibrate", measured, again, "--out", path, *FAST, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Fitted parameters" in done.stdout and "fitted/measured" in done.stdout
    assert "calibrating" in done.stderr  # the progress bar
    assert "the medians of 2 runs" in done.stderr
    assert (f"kafkasim: note: {measured.parent / 'again'}: other work took 12% of the machine's cores during the load "
            "and the hypervisor 8% (steal); the fit takes those waits for Kafka's") in done.stderr
    assert f"note: {measured}:" not in done.stderr
    assert "kafkasim: note: the leader's collector, from 1 runs' GC logs: a pause every " in done.stderr
    return path


def test_the_preset_says_what_it_was_fitted_on_and_how_well(preset: Path, measured: Path) -> None:
    text = preset.read_text()
    assert text.startswith(HEADER)
    data = yaml.safe_load(text)
    assert data["kind"] == KIND
    assert data["fitted"]["from"] == f"the medians of 2 runs: {measured.resolve()}, {(measured.parent / 'again').resolve()}"
    assert data["fitted"]["scenario"] == "quickstart"
    # Each measured run's machine_cpu, where it has one (the simulated run has none; `again` was given one).
    assert data["fitted"]["machine_cpu"] == [None, {"run": 0.5, "other": 0.12, "idle": 0.38, "steal": 0.08}]
    assert data["fitted"]["measured_on"].endswith("(a simulated run)")
    assert set(data["parameters"]) >= {"request_ms", "wakeup_median_ms", "link_median_ms"}
    assert all("fitted_from" in p and "uncertainty_factor" in p for p in data["parameters"].values())
    assert any(row["statistic"] == "Produce LocalTimeMs p50" for row in data["fit"])
    assert load_preset(preset).values["request_ms"] == data["parameters"]["request_ms"]["value"]
    # The values are the fit's to the last bit: its `set` lines (written from them) are what the preset's values
    # give. With six digits a run of the preset was not the fitted run: a change in the sixth digit moves an event
    # past another, and from there the run draws differently (the committed preset's Produce RequestQueueTimeMs
    # p99 was 1.90 ms in the fit and 1.77 from the file).
    collector = load_preset(preset).collector
    assert collector is not None and data["collector"] == collector.as_json()
    assert (collector.pauses, collector.runs, collector.pause_median_ms) == (6, 1, 3.25)
    assert overrides(load_preset(preset).values, load_scenario(QUICKSTART), collector) == data["set"]
    assert f"broker.stalls={collector.stalls()}" in data["set"]


def test_run_with_the_preset_uses_its_values_and_keeps_the_scenarios_own(preset: Path, tmp_path: Path) -> None:
    out = tmp_path / "predicted"
    done = kafkasim("run", QUICKSTART, *SHORT, "--set", "broker.costs.network_send=0.5ms", "--preset", preset,
                    "--draws", "2", "--out", out, "--no-progress")
    assert done.returncode == 0, done.stderr
    assert f"preset {preset}" in done.stderr and "own broker.costs.network_send kept" in done.stderr
    # The band: the fitted run's value and two draws of the fit's uncertainty, kept for compare.
    band = RunResult.load(out).run_info["prediction"]
    assert band["draws"] == 2 and band["preset"] == str(preset)
    e2e = band["statistics"]["end to end p50"]
    assert e2e["low"] <= e2e["value"] <= e2e["high"]
    assert "Prediction with preset" in done.stdout
    shown = kafkasim("compare", out, preset.parent / "measured",
                     "--out", tmp_path / "cmp")
    assert shown.returncode == 0, shown.stderr
    assert "A: a prediction; measured: B" in shown.stdout and "band" in shown.stdout
    resolved = load_scenario(out / "scenario.yaml")
    value = load_preset(preset).values["request_ms"]
    assert resolved.broker.costs.request.median == pytest.approx(value)  # type: ignore[union-attr]
    assert resolved.machine_preemption is not None
    assert resolved.machine_preemption.every == pytest.approx(load_preset(preset).values["preempt_every_ms"])
    assert resolved.broker.costs.network_send.value == 0.5  # type: ignore[union-attr]
    # Every broker collects as the measured leader did, and the run says so.
    every = load_preset(preset).collector.every_requests  # type: ignore[union-attr]
    assert resolved.broker.stalls.every_requests == every
    assert f"its brokers' collector (a pause every {every} requests, measured)" in done.stderr
    assert resolved.producers[0].link is not None and resolved.producers[0].link.latency.median == pytest.approx(  # type: ignore[union-attr]
        load_preset(preset).values["link_median_ms"])


def test_applied_keeps_every_value_the_scenario_writes(preset: Path) -> None:
    own = load_scenario(QUICKSTART.read_text().replace("seed: 42", "seed: 42\nbroker: {costs: {request: 2ms}}"))
    result, kept = applied(own, load_preset(preset).values)
    assert kept == ["broker.costs.request"]
    assert result.broker.costs.request.value == 2.0  # type: ignore[union-attr]


def test_a_default_link_latency_the_scenario_writes_keeps_every_link(preset: Path) -> None:
    text = QUICKSTART.read_text().replace("seed: 42", "seed: 42\nnetwork: {default_link: {latency: 2ms}}")
    result, kept = applied(load_scenario(text), load_preset(preset).values)
    assert "network.default_link.latency" in kept and "producers[0].link.latency" in kept
    assert "followers.link.latency" in kept
    assert result.producers[0].link is not None and result.producers[0].link.latency.value == 2.0  # type: ignore[union-attr]
    assert result.broker.costs.request.median == load_preset(preset).values["request_ms"]  # type: ignore[union-attr]


def test_bad_input_is_one_line_and_exit_2(measured: Path, preset: Path, tmp_path: Path,  # noqa: PLR0915
                                         capsys: pytest.CaptureFixture[str]) -> None:
    # In this process (no interpreter start per case); test_bad_input_in_a_subprocess_is_one_line_and_exit_2
    # keeps one case as a user's shell sees it.
    def fails(*args: str | Path, says: str) -> None:
        capsys.readouterr()
        code = call(*args)
        err = capsys.readouterr().err
        assert code == 2, err
        assert says in err, err
        assert "Traceback" not in err, err

    fails("calibrate", tmp_path / "nothing", "--out", tmp_path / "p.yaml", says="no kafkasim result")
    mine = tmp_path / "mine.yaml"
    mine.write_text("my notes\n")
    fails("calibrate", measured, "--out", mine, says="not a preset kafkasim wrote")
    assert mine.read_text() == "my notes\n"
    imported = tmp_path / "imported"
    shutil.copytree(measured, imported)
    (imported / "scenario.yaml").unlink()
    fails("calibrate", imported, "--out", tmp_path / "p.yaml", says="--scenario FILE")
    fails("calibrate", measured, "--out", tmp_path / "p.yaml", "--sim-duration", "soon", says="--sim-duration")
    # Fewer runs than a step takes would write the start as a fit (scipy's loop stops before its first step).
    fails("calibrate", measured, "--out", tmp_path / "p.yaml", "--max-evaluations", str(FEWEST - 1),
          says=f"--max-evaluations {FEWEST - 1}: a fit of kafkasim's {len(PARAMETERS)} parameters needs at least "
               f"{FEWEST} simulated runs")
    # With --sim-runs each evaluation is that many runs: the budget a step takes grows with them.
    fails("calibrate", measured, "--out", tmp_path / "p.yaml", "--sim-runs", "3", "--max-evaluations", str(FEWEST),
          says=f"needs at least {3 * FEWEST} simulated runs (the start and its Jacobian, then a step and the Jacobian "
               "there, 3 runs each (--sim-runs))")
    fails("calibrate", measured, "--out", tmp_path / "p.yaml", "--sim-runs", "0", says="--sim-runs")
    # Without --max-evaluations the budget grows with --sim-runs (200 runs refused --sim-runs 5 alone): what is
    # refused next is the bad duration, not the default budget.
    fails("calibrate", measured, "--out", tmp_path / "p.yaml", "--sim-runs", "5", "--sim-duration", "soon",
          says="--sim-duration 'soon'")
    assert not (tmp_path / "p.yaml").exists()
    # Several runs are runs of one scenario, each once.
    fails("calibrate", measured, measured.parent / "." / measured.name, "--out", tmp_path / "p.yaml",
          says=f"{measured} name the same run")
    other = tmp_path / "other"
    shutil.copytree(measured, other)
    (other / "scenario.yaml").write_text((other / "scenario.yaml").read_text().replace("seed: 42", "seed: 43"))
    fails("calibrate", measured, other, "--out", tmp_path / "p.yaml", says=f"{other}: ran a different scenario.yaml")
    fails("run", QUICKSTART, "--preset", mine, "--out", tmp_path / "r", says="not a fitted preset")
    fails("run", QUICKSTART, "--preset", tmp_path / "absent.yaml", "--out", tmp_path / "r", says="cannot read")
    fails("run", QUICKSTART, "--preset", preset, "--on-kafka", says="a real cluster has its own")
    fails("run", QUICKSTART, "--draws", "2", "--out", tmp_path / "r", says="'--draws': applies only with --preset")
    broken = tmp_path / "broken.yaml"
    broken.write_text(preset.read_text().replace("request_ms:\n    value:", "request_ms:\n    value: -1 #"))
    with pytest.raises(PresetError, match=r"parameters\.request_ms\.value: -1 is out of range"):
        load_preset(broken)
    fails("run", QUICKSTART, "--preset", broken, "--out", tmp_path / "r", says="request_ms.value")
    # A preset written before a parameter existed (segment_read_ms came on 2026-12-01) says how to mend it.
    older = tmp_path / "older.yaml"
    data = yaml.safe_load(preset.read_text())
    del data["parameters"]["segment_read_ms"]
    older.write_text(HEADER + "\n" + yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(PresetError, match=r"parameters\.segment_read_ms: missing: the preset was fitted before "
                       r"kafkasim had this parameter .*fit it again with `kafkasim calibrate RESULT --out FILE`"):
        load_preset(older)
    fails("run", QUICKSTART, "--preset", older, "--out", tmp_path / "r", says="--start FILE starts the fit")


def test_bad_input_in_a_subprocess_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = kafkasim("calibrate", tmp_path / "nothing", "--out", tmp_path / "p.yaml")
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == f"kafkasim: error: no kafkasim result at {tmp_path / 'nothing'}: not a directory"
    assert_no_traceback(done)


def test_an_imported_request_log_too_short_to_fit_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """A real broker's request log (Kafka 4.3.1's, a few requests) imported by import-request-log: it has no
    scenario (--scenario names the workload) and too few requests for a percentile, which calibrate says."""
    log = Path(__file__).resolve().parents[1] / "real" / "data" / "broker-0.log"
    imported = tmp_path / "imported"
    assert kafkasim("import-request-log", log, "--out", imported).returncode == 0
    done = kafkasim("calibrate", imported, "--out", tmp_path / "p.yaml")
    assert done.returncode == 2 and "--scenario FILE" in done.stderr
    done = kafkasim("calibrate", imported, "--out", tmp_path / "p.yaml", "--scenario", QUICKSTART)
    assert done.returncode == 2 and "no statistic with at least 20 values" in done.stderr, done.stderr
    assert_no_traceback(done)
    assert not (tmp_path / "p.yaml").exists()


def test_the_help_gives_the_fewest_evaluations_a_step_takes() -> None:
    import typer

    from kafkasim.calibrate.parameters import PARAMETERS, min_evaluations
    from kafkasim.console.app import app

    command = typer.main.get_command(app).commands["calibrate"]  # type: ignore[attr-defined]
    option = next(p for p in command.params if p.name == "max_evaluations")
    assert f"at least {min_evaluations(len(PARAMETERS))} times --sim-runs:" in option.help, option.help
