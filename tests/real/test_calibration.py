"""`kafkasim calibrate` on the real cluster: kafkasim fitted to a real run of acks=1 with linger.ms=0 at 300
records/s (scenarios/calibration_base.yaml, shortened) predicts the real quickstart of the differential
suite, acks=all with linger.ms=5 at 200 records/s, which the fit never saw; and a real broker's request log of
that run, imported by `kafkasim import-request-log`, is calibrated into a preset.

The tolerance. The issue's rule (within 20% of the median of three real runs, or within their own spread) is
checked by docs/make_calibration.py on a quiet machine, into docs/validation.md. Here one real run of each
configuration is all the suite can afford, and the suite's other worker shares the two cores: the same
configuration's real produce p50 was 9.4-10.9 ms in three quiet runs and 10.1, 14.3 and 15.4 ms in three runs
beside the suite, its p99 28-42 ms in the quiet runs the preset's check used (docs/calibration.json) and 33-121
ms beside the suite (a factor of 3.7 between runs), while the preset, fitted on the quiet runs, predicts 16-25 ms
here (one run of 82 ms beside the suite was 4.2 times the prediction; one of 199 ms, with a second test run
loading the machine as well, 12 times). A single loaded run cannot hold a p99 to
the issue's 20%. So the prediction must be within 50% of the one real run at the median; at the p99 it must be
nearer that run than kafkasim's defaults (no calibration), whose p99 of ~10 ms is 3 to 12 times too short, and
within a factor of 8 of it (the quiet runs' lowest prediction against the loaded runs' highest, with room), unless
the machine was too busy to time anything (more than two runnable threads per core, or no idle CPU left with
other work taking most of it: test_differential.contended),
when a p99 outside is an expected failure that says so (117 ms at a load average of 7.3, against a prediction of
13 ms and 17.7 ms on a quiet machine). The fit starts from the project's preset
(presets/this-machine.yaml), which was fitted on runs of this same configuration, with the budget of one step on
the body's four parameters. On such a run no step lowers the misfit of 3 s simulations (scipy rejects it, and
the preset stands): what the suite checks is that the preset, refined by a fit on this run where a step helps,
predicts the configuration it never saw, not how a fit converges (tests/calibrate/test_fit.py does).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from kafkasim import load_scenario
from kafkasim.calibrate.collector import measure
from kafkasim.calibrate.fit import fit
from kafkasim.calibrate.parameters import PARAMETERS, min_evaluations
from kafkasim.calibrate.predict import predict
from kafkasim.calibrate.preset import KIND, Preset, load_preset
from kafkasim.calibrate.targets import statistics as stats_of
from kafkasim.real.kafka_libs import KafkaLibs
from kafkasim.real.processes import alive
from kafkasim.real.runner import run_on_kafka
from kafkasim.record.result import RunResult
from kafkasim.scenario import shortened, with_overrides
from tests.cli.support import kafkasim
from tests.real.agreement import Agreement
from tests.real.agreement import record as record_agreement
from tests.real.test_differential import Pair, contended, pair  # noqa: F401  (the session's real quickstart, shared)

ROOT = Path(__file__).resolve().parents[2]
BASE = ROOT / "scenarios" / "calibration_base.yaml"
P50_TOLERANCE = 0.5
P99_FACTOR = 8.0


def _within(stat: str, predicted: float, real: float) -> tuple[bool, str]:
    if stat.endswith("p50"):
        return abs(predicted - real) <= P50_TOLERANCE * real, f"+-{P50_TOLERANCE:.0%}"
    return abs(math.log(predicted / real)) <= math.log(P99_FACTOR), f"x/÷ {P99_FACTOR:g}"


def test_a_fit_on_acks_1_predicts_acks_all_with_linger_it_never_saw(
        pair: Callable[[str], Pair], kafka_libs: KafkaLibs, tmp_path: Path) -> None:  # noqa: F811
    quickstart = pair("quickstart")
    base = shortened(with_overrides(load_scenario(BASE), ["warmup=2s"]), 10_000.0)
    measured = run_on_kafka(base, libs=kafka_libs, say=lambda m: print(f"[calibration_base] {m}", flush=True))
    assert measured.run_info["pids"] and alive(measured.run_info["pids"]) == []
    # The leader's collector, measured from the run's own GC log beside its request log: a JVM pausing once per
    # some hundreds of requests (430-650 in the runs of docs/calibration.md), each pause some milliseconds.
    measured.save(tmp_path / "base")
    gc = measure([(tmp_path / "base", RunResult.load(tmp_path / "base"))]).collector
    assert gc is not None and 50 <= gc.every_requests <= 5000 and 0.1 <= gc.pause_median_ms <= 200, gc
    # The followers', when they paused 5 times or more in the run (each about once per 1,000-1,200 fetch responses,
    # 3-4 times in a run of this length): fetch responses per pause, and shorter pauses than the leader's.
    if gc.follower is not None:
        assert 100 <= gc.follower.every_fetches <= 10_000 and 0.1 <= gc.follower.pause_median_ms <= 200, gc
    project = load_preset(ROOT / "presets" / "this-machine.yaml")
    # The body's four (each phase's p50), from the project's preset: one Jacobian and one step.
    free = ("request_ms", "send_ms", "wakeup_median_ms", "link_median_ms")
    fitted = fit(base, measured.summary, sim_duration_ms=3000.0, max_evaluations=min_evaluations(len(free)),
                 start=project.values, free=free)
    prediction = predict(quickstart.scenario, Preset("fitted in the suite", fitted.values, fitted.covariance, {}),
                         draws=1)
    real = {k: v for k, (_g, v, _n) in stats_of(quickstart.real.summary).items()}
    uncalibrated = {k: v for k, (_g, v, _n) in stats_of(quickstart.sim.summary).items()}
    outside = []
    for stat in ("produce acks=all p50", "produce acks=all p99", "end to end p50", "end to end p99"):
        predicted, value = prediction.value[stat], real[stat]
        ok, tolerance = _within(stat, predicted, value)
        record_agreement(Agreement(
            "calibration", f"fitted on acks=1 linger.ms=0, predicts acks=all linger.ms=5: {stat} (ms)",
            f"{predicted:.3g} (uncalibrated {uncalibrated[stat]:.3g})", f"{value:.3g}",
            f"{tolerance} (one real run beside the suite)", "agree" if ok else "DISAGREE"))
        if not ok:
            outside.append(f"{stat}: predicted {predicted:.3g}, real {value:.3g}, allowed {tolerance}")
        if stat.endswith("p99"):
            # The check has teeth: the fitted preset's prediction is nearer this real run than kafkasim's
            # defaults' (their p99 is ~10 ms; the real runs gave 28-42 ms quiet and 33-121 ms beside the suite).
            # A fixed real figure cannot serve: a quiet day's median (30 ms) is itself within the tolerance of 10 ms.
            assert abs(math.log(predicted / value)) < abs(math.log(uncalibrated[stat] / value)), (
                stat, predicted, uncalibrated[stat], value)
    # A p99 beside the suite on a machine of more than two runnable threads per core is the suite's, not Kafka's
    # (test_differential.contended): 117 ms at a load average of 7.3 on 2 cores against 17.7 ms on a quiet one,
    # where the preset, fitted quiet, predicts 13. It is then an expected failure that says so; the p50s and the
    # p99s' being nearer than kafkasim's defaults are held whatever the load (and the import below runs first).
    why = contended(quickstart)
    loaded = bool(outside) and why is not None and all(" p99:" in o for o in outside)
    # A miss names how the real run's machine was shared (kafkasim.real.machine_cpu): a CI run of 2026-12-02
    # beside two more pytest processes measured the real p50s 2.3 times the prediction, with other work at 55%.
    assert loaded or not outside, (outside, quickstart.real.run_info.get("machine_cpu"))

    # The run's brokers' request logs, imported as a production broker's would be, calibrate into a preset.
    logs = []
    for name, data in sorted(measured.extra_files.items()):
        if "/broker-" in name and name.endswith("/kafka-request.log"):  # not its server.log nor its GC log
            path = tmp_path / name.replace("/", "_")
            path.write_bytes(data)
            logs.append(path)
    assert len(logs) == 3, sorted(measured.extra_files)
    imported, preset = tmp_path / "imported", tmp_path / "from-the-log.yaml"
    assert kafkasim("import-request-log", *logs, "--out", imported).returncode == 0
    assert RunResult.load(imported).scenario_yaml is None
    done = kafkasim("calibrate", imported, "--scenario", BASE, "--out", preset, "--sim-duration", "1s",
                    "--max-evaluations", str(min_evaluations(len(PARAMETERS))), timeout=300)
    assert done.returncode == 0, done.stderr
    written = yaml.safe_load(preset.read_text())
    assert written["kind"] == KIND and written["fitted"]["from"] == str(imported.resolve())
    # A request log has the broker's breakdown only: no client latency was fitted.
    assert written["fit"] and all(not row["statistic"].startswith(("produce", "end to end"))
                                  for row in written["fit"])
    # An imported request log keeps no GC log: the preset's brokers stall by the fitted machine stalls alone.
    assert "collector" not in written and "no run kept its brokers' GC logs" in done.stderr
    load_preset(preset)
    if loaded:
        pytest.xfail(f"{why}: {outside}")
