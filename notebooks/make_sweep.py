"""Writes notebooks/sweep.ipynb (run `uv run --all-extras python notebooks/make_sweep.py` after editing).

The notebook is kept as this script so that its text can be reviewed and diffed as Python; the script runs
it (a sweep on Spark: it needs pyspark, the `spark` extra, and Java 17+) and saves it with its outputs, so
that it reads well where it is viewed without running it. tests/notebooks/test_sweep_notebook.py executes
it headless.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from notebook_builder import build_notebook, execute_notebook, write_notebook

NOTEBOOK = Path(__file__).resolve().parent / "sweep.ipynb"

CELLS: list[tuple[str, str]] = [
    ("md", """\
# Sweeps on Spark

One run answers "how does this configuration behave?". A **sweep** answers "how does the answer change
when I turn these knobs?": it takes a base scenario, a grid of parameter values and a list of seeds,
runs every (variant, seed) as its own Spark task, stores every request in Parquet, and aggregates
percentiles per variant with a confidence interval over the seeds.

This notebook runs a tiny sweep (2 x 2 variants x 3 seeds of 2.5 simulated seconds) on `local[2]`:
Spark inside this machine, two runs at a time. It needs the `spark` extra and Java 17+
(`uv run --extra spark ...`). The command-line equivalent is `kafkasim sweep SWEEP.yaml`; the example
sweeps in `scenarios/sweeps/` are bigger versions of the same thing."""),
    ("code", """\
import os
from pathlib import Path

import kafkasim
from kafkasim.scenario import dump_scenario
from kafkasim.sweep import load_sweep, run_sweep

ROOT = Path.cwd() if (Path.cwd() / "scenarios").is_dir() else Path.cwd().parent
# Results go under runs/ (git-ignored); the notebook's test points this at a temporary directory.
WORK = Path(os.environ.get("KAFKASIM_NOTEBOOK_RUNS", ROOT / "runs")) / "sweeps" / "notebook"
WORK.mkdir(parents=True, exist_ok=True)"""),
    ("md", """\
## The sweep file

A sweep file names a base scenario (a path relative to the sweep file), the `grid` (every combination
of the listed values is one *variant*), the `seeds` every variant runs with, and the metrics to
aggregate. Keys are the scenario's own key paths, as with `kafkasim run --set`.

The base here is `scenarios/quickstart.yaml` (acks=all, 1000 records/s, RF 3) with a shorter warm-up,
so that 2.5 simulated seconds leave 2 measured ones. The grid crosses the producer's `linger.ms` (0 or
5 ms) with its `acks` (1 or all)."""),
    ("code", """\
base = kafkasim.with_overrides(kafkasim.load_scenario(ROOT / "scenarios" / "quickstart.yaml"), ["warmup=0.5s"])
(WORK / "base.yaml").write_text(dump_scenario(base), encoding="utf-8")

sweep_file = WORK / "linger_x_acks.yaml"
sweep_file.write_text(\"\"\"\\
base: base.yaml
duration: 2.5s
grid:
  producers[0].linger.ms: [0, 5]
  producers[0].acks: [1, all]
seeds: [1, 2, 3]
metrics: [TotalTimeMs, produce_latency_ms, e2e_latency_ms]
output: linger_x_acks
\"\"\", encoding="utf-8")
sweep = load_sweep(sweep_file).sweep
print(f"{sweep.variant_count} variants x {len(sweep.seeds)} seeds = {sweep.variant_count * len(sweep.seeds)} runs")"""),
    ("md", """\
## Run it

`run_sweep` validates the file and every variant first (a typo in a key path is an error before Spark
starts), then starts Spark (a few seconds: a JVM and one Python worker per core), runs the 12
simulations as 12 tasks, writes their rows to Parquet and aggregates. Each run is the same
deterministic simulation `kafkasim.run_scenario` would do; Spark only spreads them over cores (or a
cluster: `master="spark://host:7077"`)."""),
    ("code", """\
result = run_sweep(sweep_file, master="local[2]")
print(f"{result.succeeded}/{result.planned} runs succeeded -> {result.output_dir.relative_to(WORK)}")"""),
    ("md", """\
## The table

`variant_table(stat)` shows one row per variant with one statistic of every metric: here the p99, as
*mean over the seeds ± half-width of its 95% confidence interval*. Each seed's p99 is computed from
that run's own requests (after the warm-up); the three p99s are then averaged."""),
    ("code", """\
result.variant_table("p99")"""),
    ("md", """\
The same numbers in long form, for your own analysis: `result.per_variant` has one row per (variant,
metric, group, statistic) with `n_seeds`, `mean`, `sd`, `ci95_low`, `ci95_high` and `pooled` (the
statistic over all seeds' rows together), and `result.per_seed` has each seed's value. The files are
in the output directory too (`per_variant.csv`, `per_seed.parquet`, and every request in
`requests/`)."""),
    ("code", """\
def produce(frame):
    return frame[(frame["metric"] == "TotalTimeMs") & (frame["group"] == "Produce")]

print("Produce TotalTimeMs p99 of each seed:")
print(produce(result.per_seed).pivot(index="variant_id", columns="seed", values="p99").round(3))
p99 = produce(result.per_variant)
p99[p99["stat"] == "p99"][["variant_id", "n_seeds", "mean", "sd", "ci95_low", "ci95_high", "pooled"]].round(3)"""),
    ("md", """\
## The plots

For each (metric, group) there is one figure with a panel per percentile. The x axis is the first
grid key (`linger.ms`), each line is one value of the second (`acks`).

**How to read a band.** The line is the mean over seeds of that percentile; the shaded band is the
95% confidence interval of that mean, from Student's t with (seeds - 1) degrees of freedom:
mean ± t · sd / sqrt(seeds). It answers "if I ran many more seeds, where would the mean land?", so:

- Two lines whose bands do not overlap differ by more than seed-to-seed noise.
- Overlapping bands do not prove the variants are equal; run more seeds (or longer runs).
- With 3 seeds t is 4.30 (with 2 it would be 12.7), so bands are wide on purpose: three seeds tell you
  little about the spread. Tail percentiles (p99.9) rest on few requests per run and have the widest
  bands. A band of zero width means every seed gave the same value (say, a latency set by a
  deterministic timer), not certainty about the world.
- All variants use the same seeds (common random numbers), so differences between variants are
  sharper than the bands alone suggest: compare `per_seed` values seed by seed when it matters."""),
    ("code", """\
from IPython.display import Image, display

for name in ["TotalTimeMs-Produce.png", "produce_latency_ms-all.png", "e2e_latency_ms-all.png"]:
    display(Image(filename=str(result.output_dir / "figures" / name)))"""),
    ("md", """\
What they show:

- **TotalTimeMs [Produce]** (broker side): acks=1 is answered after the leader's append (about 0.1 ms);
  acks=all waits in the produce purgatory for the followers, about 1.5 ms more. linger.ms does not
  change the broker's time per request.
- **produce_latency_ms** (what the producer waits, from each record's *intended* send time): for
  acks=1, linger.ms 5 adds the wait for the batch to fill (p50 from about 1.3 to 6 ms). For acks=all
  it is the other way round: linger.ms 0 is *slower*. Kafka processes one request per connection at
  a time (Kafka's `SocketServer` Processor mutes the connection until the response is sent), and an acks=all
  request holds it for the ~1.5 ms it is parked in the purgatory; with about one record per request, the
  producer's requests queue behind each other. Batching (linger.ms 5) sends six times fewer requests.
- **e2e_latency_ms** (intended send to consumer): at linger.ms 5 the two acks lines meet, because a
  consumer only sees a record once the high watermark passes it, whatever acks the producer asked
  for. At linger.ms 0 acks=all is slower end to end too: its records reach the leader later, for the
  queueing above.

With exactly two grid keys there is also a heatmap of the mean p99 per cell:"""),
    ("code", """\
display(Image(filename=str(result.output_dir / "figures" / "produce_latency_ms-all-heatmap.png")))"""),
    ("md", """\
## Next

- `scenarios/sweeps/fetch_wait_x_acks.yaml`: how long followers long-poll (`replica.fetch.wait.max.ms`)
  against acks; busy polling is slower than parking.
- `scenarios/sweeps/consumer_min_bytes_x_rate.yaml`: consumer `fetch.min.bytes` against the producer's
  rate; the wait is bytes wanted over byte rate, capped by `fetch.max.wait.ms`.
- On a cluster: `kafkasim sweep FILE --master spark://host:7077` (the sweep ships kafkasim and its
  dependencies to the executors, which need only the driver's Python; the output directory on a shared
  mount: README, "Sweeps on a cluster"). Runs are independent tasks, so more cores mean more runs at a
  time; see benchmarks/README.md, "Sweeps on Spark".

Spark is still up: another `run_sweep` in this notebook on the same master reuses the session (no JVM
start, a fraction of a second for a small sweep). `stop_session()` stops it and its JVM when you are done
(closing the notebook's kernel does too):"""),
    ("code", """\
from kafkasim.sweep import stop_session

stop_session()"""),
]


def build() -> nbformat.NotebookNode:
    return build_notebook(CELLS)


def main() -> None:
    # Stored with its outputs, so that it reads well where it is viewed without running it.
    write_notebook(NOTEBOOK, execute_notebook(build(), NOTEBOOK.parent, timeout=300))


if __name__ == "__main__":
    main()
