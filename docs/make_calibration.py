"""Calibrates kafkasim on a real Kafka cluster of this machine and checks its predictions of configurations the
fit never saw: writes presets/this-machine.yaml, docs/calibration.json and the "Calibration" section of
docs/validation.md.

    uv run python docs/make_calibration.py                  # ~20 minutes: 12 real runs, the fit, the predictions
    uv run python docs/make_calibration.py --work DIR       # keep the real runs in DIR (a later call reuses them)
    uv run python docs/make_calibration.py --start presets/this-machine.yaml   # refit from the last fit's values
    uv run python docs/make_calibration.py --predict-again  # ~1 minute: the preset's predictions by today's model
    uv run python docs/make_calibration.py --check          # ~10 minutes: new real runs of the held-out
                                                            # configurations beside the preset's predictions

1. Three real runs of scenarios/calibration_base.yaml (acks=1, linger.ms=0, 300 records/s of 1 KiB, RF 3) on
   Apache Kafka (`kafkasim run --on-kafka`); `kafkasim calibrate` fits kafkasim's costs to the medians of their
   statistics (one run on this machine can be half again slower than the next), coarse to fine: every
   parameter on 10 s simulated runs, then the tails' parameters on five runs of the real runs' length (each
   statistic their median, as the real runs'). The preset is written to
   presets/this-machine.yaml (with the date, the Kafka version and the runs it came from). The leader's garbage
   collector is measured from the base runs' GC logs, not fitted: every simulated broker of the fit and of the
   predictions pauses after as many of its requests, and after as many fetch responses as the followers did
   (kafkasim.calibrate.collector).
2. Three real runs of each held-out configuration: acks=all with linger.ms=5 at 200 records/s; 6 partitions;
   4 KiB records. The runs of step 1 and 2 are made in rounds (base, acks=all, 6 partitions, 4 KiB, then again),
   so the machine's drift over the runs falls on every configuration alike. A run in which other work and the
   hypervisor's steal took more than 5% of the machine's cores (--max-foreign) is set aside and made again, up
   to three runs in all (--attempts), the quietest kept: kafkasim models the cluster's own JVMs sharing the
   cores, not a neighbour's (kafkasim.calibrate.quiet_runs).
3. kafkasim predicts each held-out configuration with the preset (each statistic the median of five simulated
   runs of the real runs' length), with a band from draws of the fit's uncertainty (kafkasim.calibrate.predict),
   and the prediction is set beside the median of the three real runs: it counts as within when it is within
   20% of that median, or inside the real runs' own range where that is wider.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kafkasim import KAFKA_VERSION, load_scenario  # noqa: E402
from kafkasim.calibrate.collector import Collector, measure  # noqa: E402
from kafkasim.calibrate.completion import completion_gaps, median_of_medians  # noqa: E402
from kafkasim.calibrate.fit import TAILS, fit, run_seeds, starting_point, with_tails  # noqa: E402
from kafkasim.calibrate.held_out import (  # noqa: E402
    HELD_OUT,
    JSON_FILE,
    PREDICTED,
    PREDICTED_CORES,
    is_breakdown,
    latency_rows,
    row_verdict,
    write_findings,
    write_section,
)
from kafkasim.calibrate.later_check import write_check_section  # noqa: E402
from kafkasim.calibrate.parameters import overrides as parameter_overrides  # noqa: E402
from kafkasim.calibrate.predict import predict  # noqa: E402
from kafkasim.calibrate.preset import (  # noqa: E402
    Preset,
    PresetError,
    document,
    earlier_fit,
    load_preset,
    with_collector,
    write_preset,
)
from kafkasim.calibrate.quiet_runs import ATTEMPTS, MAX_FOREIGN, SetAside, quiet_run, set_aside_in, share_of  # noqa: E402
from kafkasim.calibrate.targets import measured as medians_of  # noqa: E402
from kafkasim.calibrate.targets import statistics as stats_of  # noqa: E402
from kafkasim.calibrate.targets import with_request_log  # noqa: E402
from kafkasim.record.result import RunResult, is_result_dir  # noqa: E402
from kafkasim.run.engine import Engine  # noqa: E402
from kafkasim.scenario import shortened, with_overrides  # noqa: E402

BASE = ROOT / "scenarios" / "calibration_base.yaml"
PRESET = ROOT / "presets" / "this-machine.yaml"


def real_run(key: str, overrides: list[str], out: Path, most: float,
             attempts: int) -> tuple[RunResult, list[SetAside]]:
    """A quiet real run of the base scenario with `overrides` kept in `out` (kafkasim.calibrate.quiet_runs), and the
    runs set aside for other work on the machine; an earlier call's, when `out` holds one."""
    from kafkasim.real.kafka_libs import locate
    from kafkasim.real.runner import run_on_kafka

    if is_result_dir(out) and (out / "run-info.json").is_file():
        print(f"[{out.name}] reusing {out}", flush=True)
        return RunResult.load(out), set_aside_in(out)
    scenario = load_scenario(BASE)
    if overrides:
        scenario = with_overrides(scenario, overrides)

    def say(message: str) -> None:
        print(f"[{out.name}] {message}", flush=True)

    def make() -> RunResult:
        return run_on_kafka(scenario, libs=locate(progress=print), say=say)

    kept, aside = quiet_run(make, out, say=say, most=most, attempts=attempts)
    assert isinstance(kept, RunResult)
    return kept, aside


def gap_ms(requests: pd.DataFrame) -> float | None:
    """A run's median completion gap (kafkasim.calibrate.completion.completion_gaps), None if it has none."""
    gap = median_of_medians(completion_gaps, [requests])
    return None if gap is None else round(gap, 4)


def fitted_run(values: dict[str, float], sim_ms: float, sim_runs: int,
               collector: Collector | None) -> tuple[dict[str, float], float | None]:
    """The fitted run of the base scenario (`sim_runs` runs `sim_ms` long at the fit's seeds, the brokers stalling
    as the measured `collector` says): its statistics (each one's median over the runs) and its completion gap (the
    median of the runs'), which the fit leaves out (docs/calibration.md) and the pages show beside the real runs'."""
    scenario = load_scenario(BASE)
    run = shortened(scenario, sim_ms)
    run = with_overrides(run, parameter_overrides(values, run, collector))
    results = [Engine(run, seed=seed).run() for seed in run_seeds(run.seed, sim_runs)]
    got = medians_of([with_request_log(r.summary, r.requests) for r in results])
    gaps = [g for g in (gap_ms(r.requests) for r in results) if g is not None]
    return ({key: value for key, (_group, value, _count) in got.items()},
            round(statistics.median(gaps), 4) if gaps else None)


def held_out_rows(preset: Preset, real: dict[str, list[dict[str, float]]], predict_ms: float,
                  draws: int, sim_runs: int) -> list[dict[str, object]]:
    """Each held-out configuration predicted with `preset` beside its real runs' statistics (`real`, by key)."""
    rows: list[dict[str, object]] = []
    for key, (label, overrides) in HELD_OUT.items():
        held = shortened(with_overrides(load_scenario(BASE), overrides), predict_ms)
        print(f"predicting {label} ...", flush=True)
        prediction = predict(held, preset, draws=draws, runs=sim_runs)
        for stat in (*PREDICTED, *PREDICTED_CORES, *(k for k in prediction.value if is_breakdown(k))):
            values = [m[stat] for m in real[key] if stat in m]
            if stat not in prediction.value or not values:
                continue
            rows.append({
                "configuration": label, "statistic": stat, "predicted": prediction.value[stat],
                "band": [prediction.low[stat], prediction.high[stat]], "real_median": statistics.median(values),
                "real_runs": values, "verdict": row_verdict(prediction.value[stat], values),
            })
    return rows


def write_pages(data: dict[str, object]) -> None:
    """docs/calibration.json, the Calibration section of docs/validation.md and docs/calibration.md's findings."""
    (ROOT / JSON_FILE).write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    write_section(ROOT / "docs" / "validation.md", data)
    write_check_section(ROOT / "docs" / "validation.md", data)
    write_findings(ROOT / "docs" / "calibration.md", data)
    rows = data["predictions"]
    assert isinstance(rows, list)
    rows = latency_rows(rows)
    within = sum(r["verdict"] == "within" for r in rows)
    print(f"wrote {JSON_FILE}, the Calibration section of docs/validation.md and docs/calibration.md's findings: "
          f"{within} of {len(rows)} predictions within", flush=True)


def real_of(rows: list[dict[str, object]]) -> dict[str, list[dict[str, float]]]:
    """The real runs' statistics, by held-out configuration, that a table of predictions sets them beside."""
    real: dict[str, list[dict[str, float]]] = {key: [] for key in HELD_OUT}
    keys = {label: key for key, (label, _overrides) in HELD_OUT.items()}
    for row in rows:
        runs = real[keys[str(row["configuration"])]]
        values = row["real_runs"]
        assert isinstance(values, list)
        while len(runs) < len(values):
            runs.append({})
        for run, value in zip(runs, values, strict=False):
            run[str(row["statistic"])] = float(value)
    return real


def quiet_runs(configurations: list[tuple[str, list[str], int]], work: Path, most: float,
               attempts: int) -> tuple[dict[str, list[RunResult]], dict[str, object]]:
    """Quiet real runs of each configuration (key, its overrides, how many), in rounds, one run of each
    configuration per round: the machine drifts over the ten minutes of runs (here a handler's wake-up p50 went
    from 0.03 to 0.06 ms in one sequence of runs made configuration after configuration), and runs made in blocks
    would give each configuration its block's share of the drift. Also what calibration.json keeps of them
    (`quiet`: the limit, the runs set aside, any kept above it)."""
    made: dict[str, list[RunResult]] = {key: [] for key, _overrides, _n in configurations}
    set_aside: list[SetAside] = []
    loaded: list[dict[str, str | float]] = []  # runs kept above `most`: the quietest of their attempts
    for i in range(max(n for _key, _overrides, n in configurations)):
        for key, overrides, n in configurations:
            if i < n:
                kept, aside = real_run(key, overrides, work / f"{key}-{i + 1}", most, attempts)
                made[key].append(kept)
                set_aside += aside
                if (share := share_of(kept)) is not None and share > most:
                    loaded.append({"run": f"{key}-{i + 1}", "foreign": round(share, 4)})
    return made, {"max_foreign": most, "attempts": attempts, "set_aside": [a.as_json() for a in set_aside],
                  "kept_loaded": loaded}


def predicted_as_kept(preset: Preset, data: dict[str, Any], real: dict[str, list[dict[str, float]]]
                      ) -> list[dict[str, object]]:
    """`held_out_rows` with the prediction settings docs/calibration.json keeps (`data`): its runs' length, draws
    and simulated runs per statistic, as the calibration made them."""
    return held_out_rows(preset, real, float(data["predict_seconds"]) * 1000.0, int(data["draws"]),
                         int(data.get("sim_runs", 1)))


def statistics_of(runs: list[RunResult]) -> list[dict[str, float]]:
    return [{k: v for k, (_g, v, _n) in stats_of(r.summary).items()} for r in runs]


def check(work: Path, runs: int, most: float, attempts: int) -> int:
    """The committed preset on a later day: quiet real runs of each held-out configuration, and the preset's
    predictions beside them, no fit (kafkasim.calibrate.later_check)."""
    data = json.loads((ROOT / JSON_FILE).read_text(encoding="utf-8"))
    preset = load_preset(PRESET)
    made, quiet = quiet_runs([(key, overrides, runs) for key, (_label, overrides) in HELD_OUT.items()], work, most,
                             attempts)
    when = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    rows = predicted_as_kept(preset, data, {key: statistics_of(kept) for key, kept in made.items()})
    data["check"] = {"when": when, "runs": runs, "predictions": rows,
                     "machine_cpu": [r.run_info.get("machine_cpu") for kept in made.values() for r in kept],
                     "quiet": quiet}
    write_pages(data)
    rows = latency_rows(rows)
    within = sum(r["verdict"] == "within" for r in rows)
    print(f"the preset fitted {data['when']} on runs made {when}: {within} of {len(rows)} predictions within",
          flush=True)
    return 0


def predict_again() -> int:
    """The committed preset's fitted run and held-out predictions made again by today's kafkasim, beside the real
    figures docs/calibration.json keeps: what a change of the model did to them, without new real runs (whose
    machine would not be the one the preset describes) or a new fit."""
    data = json.loads((ROOT / JSON_FILE).read_text(encoding="utf-8"))
    preset = load_preset(PRESET)
    sim_ms = float(data["sim_seconds"]) * 1000.0
    sim_runs = int(data.get("sim_runs", 1))
    print(f"the fitted run ({sim_runs} x {sim_ms / 1000:g} s) ...", flush=True)
    got, gap = fitted_run(preset.values, sim_ms, sim_runs, preset.collector)
    for row in data["fit"]:
        row["fitted"] = round(got[row["statistic"]], 4) if row["statistic"] in got else None
    if isinstance(data.get("completion_gap"), dict):
        data["completion_gap"]["fitted"] = gap
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    data["predictions"] = predicted_as_kept(preset, data, real_of(data["predictions"]))
    data["predicted_again"] = now
    if isinstance(check := data.get("check"), dict):
        check["predictions"] = predicted_as_kept(preset, data, real_of(check["predictions"]))
        check["predicted_again"] = now
    write_pages(data)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, help="where the real runs are kept (default: a temporary directory)")
    parser.add_argument("--runs", type=int, default=3, help="real runs of each held-out configuration")
    parser.add_argument("--start", type=Path, help="start the fit from an earlier preset's values (a parameter it "
                        "lacks from its first guess); default: every parameter from its first guess")
    parser.add_argument("--base-runs", type=int, default=3, help="real runs of the configuration fitted on")
    parser.add_argument("--max-foreign", type=float, default=MAX_FOREIGN,
                        help="the most of the machine's cores other work and the hypervisor's steal may take over a "
                        "kept real run (a run above it is set aside and made again; 1 keeps every run)")
    parser.add_argument("--attempts", type=int, default=ATTEMPTS,
                        help="real runs made of one at most before the quietest is kept")
    parser.add_argument("--max-evaluations", type=int, default=1000, help="simulated runs of the tails' fit")
    parser.add_argument("--coarse-ms", type=float, default=10_000.0, help="simulated time of the coarse fit's runs")
    parser.add_argument("--coarse-evaluations", type=int, default=200, help="simulated runs of the coarse fit")
    # The tails are fitted and predicted as the real runs measure them: each statistic the median of several
    # runs of the real runs' length. A p99 is made by the stalls, and one run's depends on where its seed put
    # them: one 10 s or 30 s run a fit learnt that instead of their rate (two fits of 2026-12-01 from the same
    # runs on 30 s runs put 19 and 14 of the breakdown's 26 statistics within 20%), and one 120 s run's p99 is
    # not the median of three 20 s runs' where a few long stalls make it (a 60 s prediction's acks=all p99 was
    # 17-53 ms at five seeds; docs/calibration.md).
    parser.add_argument("--sim-ms", type=float, default=20_000.0, help="simulated time of each run of the tails' "
                        "fit and of the fitted run (default: the real runs')")
    parser.add_argument("--sim-runs", type=int, default=5, help="simulated runs per evaluation of the tails' fit, "
                        "per prediction and of the fitted run, each statistic their median")
    parser.add_argument("--predict-ms", type=float, default=20_000.0,
                        help="simulated time of each prediction's runs (default: the real runs')")
    parser.add_argument("--draws", type=int, default=4, help="draws of the fit's uncertainty per prediction")
    parser.add_argument("--predict-again", action="store_true",
                        help="no real runs and no fit: run the committed preset's fitted run and predictions again "
                        "with today's kafkasim, against the real figures docs/calibration.json keeps (after a change "
                        "of the model)")
    parser.add_argument("--check", action="store_true",
                        help="no fit: new quiet real runs of each held-out configuration (--runs of each), the "
                        "committed preset's predictions beside them (docs/validation.md, \"Calibration: the preset "
                        "on a later day\")")
    args = parser.parse_args(argv)
    if not 0 <= args.max_foreign <= 1:
        parser.error(f"--max-foreign {args.max_foreign:g}: allowed: a share of the cores from 0 to 1")
    if args.attempts < 1:
        parser.error(f"--attempts {args.attempts}: allowed: 1 or more")
    if args.predict_again:
        return predict_again()
    if args.check and args.start is not None:
        parser.error("--check makes no fit: --start does not apply")
    if args.check:
        # A calibration's directory holds held-out runs of the same names, which a check would reuse as its new ones.
        if args.work is not None and (args.work / "base-1").exists():
            parser.error(f"--work {args.work} holds a calibration's runs (base-1): a check makes new runs of the "
                         "held-out configurations; give it a directory of its own")
        check_work = args.work or Path(tempfile.mkdtemp(prefix="kafkasim-calibration-check-"))
        check_work.mkdir(parents=True, exist_ok=True)
        return check(check_work, args.runs, args.max_foreign, args.attempts)
    # The earlier preset is read before the real runs (twenty minutes): a wrong path fails at once.
    earlier: dict[str, float] = {}
    started = ""
    if args.start is not None:
        try:
            earlier, fitted_when = earlier_fit(args.start)
        except PresetError as exc:
            print(f"make_calibration.py: error: --start {exc}", file=sys.stderr)
            return 2
        started = f"; the fit started from the values of the preset fitted {fitted_when}"
    work = args.work or Path(tempfile.mkdtemp(prefix="kafkasim-calibration-"))
    work.mkdir(parents=True, exist_ok=True)
    configurations = [("base", [], args.base_runs),
                      *((key, overrides, args.runs) for key, (_label, overrides) in HELD_OUT.items())]
    made, quiet = quiet_runs(configurations, work, args.max_foreign, args.attempts)
    bases = made.pop("base")
    base = bases[0]
    real: dict[str, list[RunResult]] = made

    # The leader's collector, measured from the base runs' GC logs: the fit's brokers stall as it did
    # (kafkasim.calibrate.collector), and the machine's stalls are fitted for the rest.
    gc = measure([(work / f"base-{i + 1}", b) for i, b in enumerate(bases)])
    print(gc.said, flush=True)
    scenario = with_collector(load_scenario(base.scenario_yaml or ""), gc.collector)
    measured = [b.summary for b in bases]
    jobs = max(1, os.cpu_count() or 1)

    def show(n: int, most: int, best: float) -> None:
        print(f"\r  {n}/{most} runs, sum of squares {best:.3g}", end="", flush=True)

    # Coarse to fine: short runs find the body (every p50) cheaply; long runs from there find the tails (the
    # spreads and the stalls), which a short run has too few stalls to average: a fit to a 10 s run learns
    # where its seed put them.
    print(f"fitting on the medians of {len(bases)} runs in {work}: every parameter on {args.coarse_ms / 1000:g} s "
          "runs ...", flush=True)
    logs = [b.requests for b in bases]
    start = starting_point(medians_of(measured), logs) | earlier
    coarse = fit(scenario, measured, sim_duration_ms=args.coarse_ms, max_evaluations=args.coarse_evaluations,
                 progress=show, jobs=jobs, start=start, requests=logs, medians_only=True)
    print(f"\n  then the tails ({', '.join(TAILS)}) on {args.sim_ms / 1000:g} s runs ...", flush=True)
    tails = fit(scenario, measured, sim_duration_ms=args.sim_ms, max_evaluations=args.max_evaluations,
                progress=show, start=coarse.values, free=TAILS, jobs=jobs, requests=logs, sim_runs=args.sim_runs)
    fitted = with_tails(coarse, tails)
    print(flush=True)
    when = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    machine = f"{os.cpu_count()} cores, {platform.system()} {platform.machine()}"
    # How the machine's cores were shared over each real run's load (kafkasim.real.machine_cpu).
    base_cpu = [b.run_info.get("machine_cpu") for b in bases]
    doc = document(fitted, source=f"the medians of {len(bases)} real runs of {BASE.relative_to(ROOT)} "
                   f"(docs/make_calibration.py){started}",
                   scenario=scenario, run_info=base.run_info, when=when, machine=machine,
                   machine_cpu=base_cpu, collector=gc.collector)
    write_preset(PRESET, doc)
    preset = load_preset(PRESET)
    print(f"wrote {PRESET.relative_to(ROOT)}", flush=True)

    rows = held_out_rows(preset, {key: statistics_of(runs) for key, runs in real.items()}, args.predict_ms, args.draws,
                         args.sim_runs)
    # Each statistic of each real run too: the pages set a fitted statistic beside the runs' own range.
    each = [stats_of(with_request_log(b.summary, b.requests)) for b in bases]
    fit_rows = [{"statistic": r["statistic"], "measured": r["measured_ms"], "fitted": r["fitted_ms"],
                 "real_runs": [round(s[r["statistic"]][1], 4) for s in each if r["statistic"] in s]}
                for r in doc["fit"]]
    _stats, fitted_gap = fitted_run(preset.values, args.sim_ms, args.sim_runs, preset.collector)
    data = {"when": when, "machine": machine, "kafka": KAFKA_VERSION, "preset": str(PRESET.relative_to(ROOT)),
            "fit_seconds": round(fitted.seconds, 1), "evaluations": fitted.evaluations, "runs": args.runs,
            "base_runs": len(bases),
            "draws": args.draws, "sim_seconds": args.sim_ms / 1000, "sim_runs": args.sim_runs,
            "predict_seconds": args.predict_ms / 1000,
            "fit": fit_rows, "predictions": rows,
            "collector": None if gc.collector is None else gc.collector.as_json(),
            "completion_gap": {"real_runs": [gap_ms(b.requests) for b in bases], "fitted": fitted_gap},
            "machine_cpu": {"base": base_cpu,
                            "held_out": [r.run_info.get("machine_cpu") for runs in real.values() for r in runs]},
            "quiet": quiet}
    write_pages(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
