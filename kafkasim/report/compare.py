"""Comparing saved runs: the same percentiles side by side, the differences, and one overlaid figure.

The standard way to answer "what did this setting change": run the scenario twice (e.g. with and without
`--set producers[0].linger.ms=0`), then compare the two result directories. Every number is computed here
from the saved rows with the summary's own rules (kafkasim.record.summary.percentiles: HdrHistogram, 3
significant digits; requests and batches sent during warm-up left out), so the first run's column equals
what `kafkasim run` printed for it.

Groups compared, each one latency per row set:
- per API: the broker's TotalTimeMs (Kafka's RequestMetrics), all clients of that API together;
- per broker and API, when a run had more than one broker handling requests: TotalTimeMs of the requests
  that broker handled (the requests table's `broker`);
- per client: client send -> receive of that client's requests (what the client waited for one request);
- per producer: latency from the intended send time to the ack (open-loop load, no coordinated omission);
- per consumer: end to end, from the intended send time to the moment that consumer first saw the batch.

Beside them, the cores each kind of broker thread used after the warm-up (summary ``per_broker`` ``cores``: a
simulated broker's modelled CPU, a real one's JVM threads): a real run whose threads used more CPU than its
prediction's for the same load ran on a slower machine than the one the preset was fitted on, or did work the
model leaves out.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from kafkasim.record.host_pauses import HostPauses
from kafkasim.record.output_dir import Layout, OutputDirError, check_output_dir, write_dir
from kafkasim.record.result import ResultDirectoryError, RunResult
from kafkasim.record.summary import (
    CORE_KINDS,
    CORES_DATA_PLANE,
    CORES_NETWORK_THREADS,
    CORES_REPLICA_FETCHERS,
    CORES_REQUEST_HANDLERS,
    percentiles,
)
from kafkasim.report.canvas import new_figure
from kafkasim.report.frames import after_warmup, finite, natural_key, warmup_ms
from kafkasim.report.latency_scale import apply_latency_scale
from kafkasim.report.palette import API_ORDER
from kafkasim.report.pauses import run_pauses
from kafkasim.report.percentile_axis import format_percentile_axis, percentile_curve

STATS = ("count", "p50", "p95", "p99", "p99.9", "max")
FIGURE_FILE = "compare.png"
TABLE_FILE = "compare.json"  # also the marker that tells a comparison directory kafkasim wrote
RUN_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
# Distinct, colour-blind safe (Okabe-Ito) line colours, one per run, in argument order.
RUN_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")


CORES_ALL = "all"


class CompareError(ValueError):
    """Runs that cannot be compared (too few, not results, missing files); the message says why."""


@dataclass(frozen=True)
class Run:
    """One saved run under comparison: its letter (A, B, ...), where it came from and its tables."""

    letter: str
    path: Path
    result: RunResult

    @property
    def name(self) -> str:
        """The scenario's name and seed as the summary and scenario.yaml tell them, else the directory's name;
        where it ran when not in the simulator ("on Kafka 4.3.1")."""
        seed = self.result.summary.get("seed")
        scenario = _scenario_name(self.result.scenario_yaml)
        name = f"{scenario or self.path.name}, seed {seed}" if seed is not None else (scenario or self.path.name)
        engine = self.result.run_info.get("engine")
        if engine == "kafka":
            return f"{name}, on Kafka {self.result.run_info.get('kafka_version', '?')}"
        if engine == "kafka-request-log":
            return f"{name}, a broker's request log"
        return name

    @cached_property
    def pauses(self) -> list[HostPauses] | None:
        """Its hosts' stop-the-world pauses in its window (kafkasim.report.pauses), read once for the table and
        compare.json."""
        return run_pauses(self.result, self.path)

    @cached_property
    def cores(self) -> dict[str, dict[str, float]] | None:
        """Per broker that used any, the cores its threads used after the warm-up by kind (`CORE_KINDS`; a real
        broker whose threads were not named has its request handlers and network threads only together, as
        ``data plane``) and ``all`` of them; None when the run has none (an older run, a request log, a window).
        Read once for the table and compare.json."""
        found: dict[str, dict[str, float]] = {}
        for broker, data in (self.result.summary.get("per_broker") or {}).items():
            cores = data.get("cores") if isinstance(data, dict) else None
            if not cores:
                continue
            kinds = {kind: float(cores.get(kind, 0.0)) for kind in CORE_KINDS}
            plane = float(cores.get(CORES_DATA_PLANE, 0.0))
            total = plane + kinds[CORES_REPLICA_FETCHERS]
            if total <= 0:
                continue
            if plane > 0 and kinds[CORES_REQUEST_HANDLERS] + kinds[CORES_NETWORK_THREADS] == 0:
                kinds = {CORES_DATA_PLANE: plane, CORES_REPLICA_FETCHERS: kinds[CORES_REPLICA_FETCHERS]}
            found[broker] = {**kinds, CORES_ALL: total}
        return found or None

    @property
    def cannot_show(self) -> str | None:
        """What this run's tables lack that a simulated run has (None for a simulated run)."""
        return cannot_show(self.result.run_info)

    @property
    def shared_machine(self) -> str | None:
        """For a real run made while other work or the hypervisor took a notable share of the machine's cores,
        how much (kafkasim.real.machine_cpu); None otherwise."""
        from kafkasim.real.machine_cpu import shared_machine

        return shared_machine(self.result.run_info.get("machine_cpu"))


def cannot_show(run_info: dict[str, Any]) -> str | None:
    """What a result's tables lack that a simulated run's have, from its run-info (None for a simulated run)."""
    engine = run_info.get("engine")
    if engine == "kafka":
        return ("ran on a real Kafka cluster: the brokers' request logs give each request's RequestMetrics "
                "breakdown, but not the clients' send and receive times (client send -> receive is empty; "
                "warm-up is cut at the broker's arrival time); its producer and consumer latencies come from "
                "the load driver per record, grouped into the batches the brokers appended; no high "
                "watermark or handler idle gauges (Kafka has no such JMX gauge)")
    if engine == "kafka-request-log":
        return "is a broker's request log: requests and their breakdown only (no client times, no records, no gauges)"
    return None


@dataclass(frozen=True)
class Group:
    """One latency compared across runs: `kind` (api, broker, client, producer, consumer), `key` and what it
    measures."""

    kind: str
    key: str
    measure: str
    stats: tuple[dict[str, Any] | None, ...]  # per run, None where the run has no such rows
    values: tuple[np.ndarray, ...]

    @property
    def title(self) -> str:
        return f"{self.key}: {self.measure}"


def _scenario_name(text: str | None) -> str | None:
    if not text:
        return None
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    name = data.get("name") if isinstance(data, dict) else None
    return str(name) if name else None


def load_runs(paths: Sequence[str | Path]) -> list[Run]:
    """The runs to compare, lettered A, B, ... in the order given; CompareError for anything unusable."""
    if len(paths) < 2:
        raise CompareError(f"compare needs at least two result directories, got {len(paths)}; e.g. "
                           "kafkasim compare runs/quickstart-42 runs/quickstart-linger0")
    if len(paths) > len(RUN_LETTERS):
        raise CompareError(f"compare takes at most {len(RUN_LETTERS)} runs, got {len(paths)}")
    runs: list[Run] = []
    for letter, given in zip(RUN_LETTERS, paths, strict=False):
        try:
            result = RunResult.load(given)
        except ResultDirectoryError as exc:
            raise CompareError(f"{exc}; give directories written by kafkasim run") from None
        except (OSError, ValueError) as exc:  # an unreadable Parquet file, say
            raise CompareError(f"{given}: cannot be read as a kafkasim result ({exc})") from None
        missing = [c for c in ("api", "client", "TotalTimeMs", "client_latency_ms", "client_send_ms")
                   if c not in result.requests.columns]
        if missing:
            raise CompareError(f"{given}: requests.parquet lacks column(s) {', '.join(missing)}; "
                               "is it a result of this kafkasim version?")
        runs.append(Run(letter, Path(given), result))
    return runs


def _ordered(names: set[str], first: Sequence[str] = ()) -> list[str]:
    return [n for n in first if n in names] + sorted(names - set(first), key=natural_key)


def _after_warmup_records(records: pd.DataFrame, warmup: float) -> pd.DataFrame:
    if warmup <= 0 or "send_ms" not in records.columns:
        return records
    return records[records["send_ms"].to_numpy(dtype=float, na_value=np.nan) >= warmup]


def latency_samples(result: RunResult) -> dict[tuple[str, str, str], np.ndarray]:
    """(kind, key, measure) -> the run's latencies (ms), after warm-up: per API (TotalTimeMs), per client
    (send -> receive), per producer (intended send -> ack), per consumer (intended send -> first seen)."""
    warmup = warmup_ms(result.summary)
    requests = after_warmup(result.requests, warmup)
    out: dict[tuple[str, str, str], np.ndarray] = {}
    api = requests["api"].astype(str)
    for name in _ordered(set(api), API_ORDER):
        out[("api", name, "TotalTimeMs")] = finite(requests.loc[api == name, "TotalTimeMs"])
    if "broker" in requests.columns:
        broker = requests["broker"].to_numpy()
        handled = sorted({int(b) for b in np.unique(broker) if b >= 0})
        if len(handled) > 1:
            for b in handled:
                for name in _ordered(set(api[broker == b]), API_ORDER):
                    rows = requests[(broker == b) & (api == name).to_numpy()]
                    out[("broker", f"broker-{b} {name}", "TotalTimeMs")] = finite(rows["TotalTimeMs"])
    client = requests["client"].astype(str)
    for name in _ordered(set(client)):
        out[("client", name, "client send -> receive")] = finite(requests.loc[client == name, "client_latency_ms"])
    records = _after_warmup_records(result.records, warmup)
    if {"producer", "ack_ms", "first_intended_ms", "error"} <= set(records.columns):
        ok = records[records["error"].to_numpy() == 0]
        producer = ok["producer"].astype(str)
        latency = ok["ack_ms"].astype(float) - ok["first_intended_ms"].astype(float)
        for name in _ordered(set(producer)):
            out[("producer", name, "produce, intended send -> ack")] = finite(latency[producer == name])
    if "first_intended_ms" in records.columns:
        intended = records["first_intended_ms"].astype(float)
        for column in sorted((c for c in records.columns if c.startswith("consumed_ms:")), key=natural_key):
            name = column.split(":", 1)[1]
            out[("consumer", name, "end to end, intended send -> seen")] = finite(records[column].astype(float)
                                                                                 - intended)
    return out


def compare_groups(runs: Sequence[Run]) -> list[Group]:
    """Every latency any run has, in a fixed order (APIs, clients, producers, consumers), with each run's
    percentiles (None for a run without it)."""
    per_run = [latency_samples(run.result) for run in runs]
    keys: list[tuple[str, str, str]] = []
    for samples in per_run:
        keys.extend(k for k in samples if k not in keys)
    order = {"api": 0, "broker": 1, "client": 2, "producer": 3, "consumer": 4}
    keys.sort(key=lambda k: order[k[0]])  # stable: each kind keeps the first run's order
    groups = []
    for kind, key, measure in keys:
        values = tuple(samples.get((kind, key, measure), np.empty(0)) for samples in per_run)
        stats = tuple(percentiles(v) if v.size else None for v in values)
        groups.append(Group(kind, key, measure, stats, values))
    return groups


def difference(base: dict[str, Any] | None, other: dict[str, Any] | None, stat: str) -> tuple[float, float] | None:
    """(other - base, other / base) of one statistic; None when either is missing (ratio inf if base is 0)."""
    if base is None or other is None or base.get(stat) is None or other.get(stat) is None:
        return None
    a, b = float(base[stat]), float(other[stat])
    ratio = b / a if a != 0 else (1.0 if b == 0 else float("inf"))
    return b - a, ratio


def comparison_json(runs: Sequence[Run], groups: Sequence[Group]) -> dict[str, Any]:
    """What compare.json holds: the runs and, per group, each run's statistics and its differences to A."""
    return {
        "runs": [{"letter": r.letter, "path": str(r.path), "name": r.name,
                  "engine": r.result.run_info.get("engine", "kafkasim"), "cannot_show": r.cannot_show} for r in runs],
        "groups": [
            {
                "kind": g.kind, "key": g.key, "measure": g.measure,
                "runs": {
                    r.letter: {
                        "stats": s,
                        "vs_first": None if i == 0 or s is None else {
                            stat: _json_pair(difference(g.stats[0], s, stat)) for stat in STATS},
                    }
                    for i, (r, s) in enumerate(zip(runs, g.stats, strict=True))
                },
            }
            for g in groups
        ],
        # Each run's stop-the-world pauses per host (kafkasim.report.pauses); None for a run that kept none.
        "pauses": {r.letter: None if r.pauses is None else [h.as_json() for h in r.pauses] for r in runs},
        # Each run's cores per broker and kind of thread after the warm-up (Run.cores); None for a run without.
        "cores": {r.letter: r.cores for r in runs},
    }


def _json_pair(pair: tuple[float, float] | None) -> dict[str, float | None] | None:
    if pair is None:
        return None
    delta, ratio = pair
    return {"difference": delta, "ratio": ratio if np.isfinite(ratio) else None}


def compare_figure(runs: Sequence[Run], groups: Sequence[Group]) -> Figure:
    """Latency by percentile, one panel per API (broker TotalTimeMs) and one for each producer's latency
    from the intended send, one line per run (A, B, ... in the colours of the tables' letters)."""
    panels = [g for g in groups if g.kind in ("api", "producer") and any(v.size for v in g.values)]
    if not panels:
        raise CompareError("none of the runs has a request after warm-up: nothing to draw")
    columns = min(len(panels), 2)
    rows = (len(panels) + columns - 1) // columns
    figure = new_figure(7.0 * columns, 1.0 + 4.2 * rows)
    axes = figure.subplots(rows, columns, squeeze=False).ravel()
    for ax, group in zip(axes, panels, strict=False):
        for run, values in zip(runs, group.values, strict=True):
            if not values.size:
                continue
            xs, ys = percentile_curve(values)
            colour = RUN_COLOURS[(ord(run.letter) - ord("A")) % len(RUN_COLOURS)]
            ax.plot(xs, ys, lw=2, color=colour, label=f"{run.letter}: {run.path.name} (n={values.size})")
            ax.plot(xs[-1:], ys[-1:], "o", ms=4, color=colour)
        format_percentile_axis(ax)
        apply_latency_scale(ax, np.concatenate([v for v in group.values if v.size]))
        ax.set_title(group.title, fontsize="medium")
        ax.set_ylabel("latency (ms)")
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(loc="upper left", fontsize="small", framealpha=0.9)
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    legend = "; ".join(f"{r.letter} = {r.path}" for r in runs)
    figure.suptitle(f"Latency by percentile, compared (after each run's warm-up)\n{legend}", fontsize="large")
    return figure


def _foreign_entries(directory: Path) -> list[str]:
    return [p.name for p in directory.iterdir()
            if p.name not in (FIGURE_FILE, TABLE_FILE) or p.is_symlink() or not p.is_file()]


COMPARE_LAYOUT = Layout("a kafkasim comparison", TABLE_FILE, lambda d: (d / TABLE_FILE).is_file(), _foreign_entries)


def check_compare_dir(out: str | Path, *, label: str | None = None) -> Path:
    """Where a comparison may be written (kafkasim.record.output_dir's rules); CompareError otherwise."""
    try:
        return check_output_dir(out, COMPARE_LAYOUT, label=label)
    except OutputDirError as exc:
        raise CompareError(str(exc)) from None


def default_compare_dir(runs: Sequence[Run]) -> Path:
    """runs/compare-<A's dir>-vs-<B's dir>[-...][-<from>-<to> for a window] under the working directory."""
    from kafkasim.record.window import Window

    window = runs[0].result.summary.get("window") if runs else None
    suffix = f"-{Window(window['from_ms'], window['to_ms']).label}" if window else ""
    return Path("runs") / (("compare-" + "-vs-".join(r.path.resolve().name for r in runs))[:180] + suffix)


def write_comparison(runs: Sequence[Run], groups: Sequence[Group], out: str | Path) -> Path:
    """Write compare.png and compare.json into `out` atomically (a new or empty directory, or an earlier
    comparison holding only those two files); returns the directory."""
    target = check_compare_dir(out)
    figure = compare_figure(runs, groups)

    def write(tmp: Path) -> None:
        figure.savefig(tmp / FIGURE_FILE, dpi=110)
        text = json.dumps(comparison_json(runs, groups), indent=2, allow_nan=False) + "\n"
        (tmp / TABLE_FILE).write_text(text, encoding="utf-8")

    try:
        write_dir(target, COMPARE_LAYOUT, write, label=str(out))
    except OutputDirError as exc:
        raise CompareError(str(exc)) from None
    return target
