"""Calibrates kafkasim on a real Kafka cluster of this machine and checks its predictions of configurations the
fit never saw: writes presets/this-machine.yaml, docs/calibration.json and the "Calibration" section of
docs/validation.md.

    uv run python docs/make_calibration.py                  # ~15 minutes: 10 real runs, the fit, the predictions
    uv run python docs/make_calibration.py --work DIR       # keep the real runs in DIR (a later call reuses them)

1. One real run of scenarios/calibration_base.yaml (acks=1, linger.ms=0, 300 records/s of 1 KiB, RF 3) on
   Apache Kafka (`kafkasim run --on-kafka`); `kafkasim calibrate` fits kafkasim's costs to it, and the preset
   is written to presets/this-machine.yaml (with the date, the Kafka version and the run it came from).
2. Three real runs of each held-out configuration: acks=all with linger.ms=5 at 200 records/s; 6 partitions;
   4 KiB records.
3. kafkasim predicts each held-out configuration with the preset, with a band from draws of the fit's
   uncertainty (kafkasim.calibrate.predict), and the prediction is set beside the median of the three real
   runs: it counts as within when it is within 20% of that median, or inside the real runs' own range where
   that is wider.
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kafkasim import KAFKA_VERSION, load_scenario  # noqa: E402
from kafkasim.calibrate.fit import fit  # noqa: E402
from kafkasim.calibrate.held_out import (  # noqa: E402
    HELD_OUT,
    JSON_FILE,
    PREDICTED,
    row_verdict,
    write_section,
)
from kafkasim.calibrate.predict import predict  # noqa: E402
from kafkasim.calibrate.preset import document, load_preset, write_preset  # noqa: E402
from kafkasim.calibrate.targets import statistics as stats_of  # noqa: E402
from kafkasim.record.result import RunResult, is_result_dir  # noqa: E402
from kafkasim.scenario import with_overrides  # noqa: E402

BASE = ROOT / "scenarios" / "calibration_base.yaml"
PRESET = ROOT / "presets" / "this-machine.yaml"


def real_run(key: str, overrides: list[str], out: Path) -> RunResult:
    from kafkasim.real.kafka_libs import locate
    from kafkasim.real.runner import run_on_kafka

    if is_result_dir(out) and (out / "run-info.json").is_file():
        print(f"[{out.name}] reusing {out}", flush=True)
        return RunResult.load(out)
    scenario = load_scenario(BASE)
    if overrides:
        scenario = with_overrides(scenario, overrides)
    result = run_on_kafka(scenario, libs=locate(progress=print), say=lambda m: print(f"[{out.name}] {m}", flush=True))
    result.save(out)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, help="where the real runs are kept (default: a temporary directory)")
    parser.add_argument("--runs", type=int, default=3, help="real runs of each held-out configuration")
    parser.add_argument("--max-evaluations", type=int, default=300)
    parser.add_argument("--sim-ms", type=float, default=10_000.0, help="simulated time of each run of the fit")
    parser.add_argument("--draws", type=int, default=4, help="draws of the fit's uncertainty per prediction")
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="kafkasim-calibration-"))
    work.mkdir(parents=True, exist_ok=True)
    base = real_run("base", [], work / "base")
    real: dict[str, list[RunResult]] = {
        key: [real_run(key, overrides, work / f"{key}-{i + 1}") for i in range(args.runs)]
        for key, (_label, overrides) in HELD_OUT.items()}

    scenario = load_scenario(base.scenario_yaml or "")
    print(f"fitting on {work / 'base'} ...", flush=True)
    fitted = fit(scenario, base.summary, sim_duration_ms=args.sim_ms, max_evaluations=args.max_evaluations,
                 progress=lambda n, most, best: print(f"\r  {n}/{most} runs, sum of squares {best:.3g}", end="",
                                                      flush=True))
    print(flush=True)
    when = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    machine = f"{os.cpu_count()} cores, {platform.system()} {platform.machine()}"
    doc = document(fitted, source=f"a real run of {BASE.relative_to(ROOT)} (docs/make_calibration.py)",
                   scenario=scenario, run_info=base.run_info, when=when, machine=machine)
    write_preset(PRESET, doc)
    preset = load_preset(PRESET)
    print(f"wrote {PRESET.relative_to(ROOT)}", flush=True)

    rows = []
    for key, (label, overrides) in HELD_OUT.items():
        held = with_overrides(load_scenario(BASE), overrides) if overrides else load_scenario(BASE)
        print(f"predicting {label} ...", flush=True)
        prediction = predict(held, preset, draws=args.draws)
        measured = [{k: v for k, (_g, v, _n) in stats_of(r.summary).items()} for r in real[key]]
        for stat in PREDICTED:
            values = [m[stat] for m in measured if stat in m]
            if stat not in prediction.value or not values:
                continue
            median = statistics.median(values)
            rows.append({
                "configuration": label, "statistic": stat, "predicted": prediction.value[stat],
                "band": [prediction.low[stat], prediction.high[stat]], "real_median": median,
                "real_runs": values, "verdict": row_verdict(prediction.value[stat], values),
            })
    fit_rows = [{"statistic": r["statistic"], "measured": r["measured_ms"], "fitted": r["fitted_ms"]}
                for r in doc["fit"]]
    data = {"when": when, "machine": machine, "kafka": KAFKA_VERSION, "preset": str(PRESET.relative_to(ROOT)),
            "fit_seconds": round(fitted.seconds, 1), "evaluations": fitted.evaluations, "runs": args.runs,
            "draws": args.draws, "fit": fit_rows, "predictions": rows}
    (ROOT / JSON_FILE).write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    write_section(ROOT / "docs" / "validation.md", data)
    within = sum(r["verdict"] == "within" for r in rows)
    print(f"wrote {JSON_FILE} and the Calibration section of docs/validation.md: {within} of {len(rows)} "
          "predictions within", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
