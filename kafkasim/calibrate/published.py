"""Published measurements of real Kafka beside kafkasim: the figures, the runs that reproduce each, what each
run's result yields, when a figure counts as met, and the "Published measurements" section of
docs/validation.md that docs/make_published.py writes from docs/published.json (and docs/make_validation.py keeps).

Sources:
- Jay Kreps, "Benchmarking Apache Kafka: 2 Million Writes Per Second (On Three Cheap Machines)", LinkedIn
  engineering blog, 27 April 2014 (three brokers, six partitions, 100-byte records, 1 Gb Ethernet).
- Jun Rao, "How to choose the number of topics/partitions in a Kafka cluster?", Confluent blog, 12 March 2015.
- Kafka's own rule for `flush.messages` (UnifiedLog.append flushes the log once that many messages lie above
  its last flush; with 1, each append of each partition is flushed).

Some figures fitted the `kreps-2014` hardware preset's values that kafkasim cannot know from the hardware
(kafkasim.scenario.hardware.KREPS_FITTED); the others are predictions of the preset, nothing fitted to them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from kafkasim.calibrate.doc_section import write_between
from kafkasim.record.result import RunResult

JSON_FILE = "docs/published.json"
BEGIN = "<!-- published: written by docs/make_published.py from docs/published.json -->"
END = "<!-- published: end -->"

KREPS = ('Kreps 2014 ("Benchmarking Apache Kafka: 2 Million Writes Per Second (On Three Cheap Machines)", '
         "LinkedIn)")
RAO = 'Jun Rao 2015 ("How to choose the number of topics/partitions in a Kafka cluster?", Confluent)'
FSYNC = "Kafka's flush.messages rule (UnifiedLog.append)"

PRODUCER = "docs/published/kreps_2014_producer.yaml"
THREE = "docs/published/kreps_2014_three_producers.yaml"
PRODUCER_AND_CONSUMER = "docs/published/kreps_2014_producer_and_consumer.yaml"
END_TO_END = "scenarios/kreps_2014_end_to_end.yaml"
COMMIT = "docs/published/jun_rao_2015_commit_time.yaml"
FSYNC_FILE = "docs/published/fsync_per_append.yaml"
LONG_MAX = "9223372036854775807"


@dataclass(frozen=True)
class Run:
    """One simulated run: a scenario file (relative to the repository) and its `--set` overrides."""

    path: str
    overrides: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return " ".join((self.path, *self.overrides))


SINGLE = Run(PRODUCER)
ASYNC3 = Run(PRODUCER, ("topics[0].replication.factor=3",))
SYNC3 = Run(PRODUCER, ("topics[0].replication.factor=3", "producers[0].acks=all"))
THREE_ASYNC3 = Run(THREE)
BOTH = Run(PRODUCER_AND_CONSUMER)
E2E = Run(END_TO_END)
COMMIT_10 = Run(COMMIT, ("topics[0].partitions=10",))
COMMIT_1000 = Run(COMMIT)
FSYNC_PARTITIONS = (1, 2, 4)


def fsync_run(partitions: int, flush: bool) -> Run:
    overrides = [f"topics[0].partitions={partitions}"]
    if not flush:
        overrides.append(f"topics[0].flush.messages={LONG_MAX}")
    return Run(FSYNC_FILE, tuple(overrides))


@dataclass(frozen=True)
class Figure:
    key: str
    source: str
    setup: str
    statistic: str
    published: float
    unit: str
    runs: tuple[Run, ...]
    rule: str
    """How ours is held to the published figure: `within 15%`, `within 20%, truncated to whole ms`, `within 25%`,
    `at least 0.95x the producer alone`, `within 10% of k x flush`."""
    fitted: str | None = None
    """The preset value this figure fitted (None: a prediction, nothing fitted to it)."""


FIGURES: tuple[Figure, ...] = (
    Figure("kreps_single", KREPS, "Single producer thread, no replication", "throughput", 821_557, "records/s",
           (SINGLE,), "within 15%", fitted="producer_request_ms"),
    Figure("kreps_async3", KREPS, "Single producer thread, 3x asynchronous replication", "throughput", 786_980,
           "records/s", (ASYNC3,), "within 15%"),
    Figure("kreps_sync3", KREPS, "Single producer thread, 3x synchronous replication (acks=all)", "throughput",
           421_823, "records/s", (SYNC3,), "within 15%", fitted="broker_request_ms"),
    Figure("kreps_three", KREPS, "Three producers, 3x asynchronous replication", "throughput", 2_024_032,
           "records/s", (THREE_ASYNC3,), "within 15%"),
    Figure("kreps_both", KREPS, "Producer and consumer at once (3x asynchronous)", "producer throughput", 795_064,
           "records/s", (BOTH,), "within 15%"),
    Figure("kreps_both_vs_alone", KREPS, "Producer and consumer at once, against the producer alone",
           "throughput ratio", 795_064 / 786_980, "x", (BOTH, ASYNC3), "at least 0.95"),
    Figure("kreps_e2e_p50", KREPS, "End-to-end latency (TestEndToEndLatency)", "p50", 2, "ms", (E2E,),
           "within 20%, truncated to whole ms", fitted="consumer_poll_median_ms"),
    Figure("kreps_e2e_p99", KREPS, "End-to-end latency (TestEndToEndLatency)", "p99", 3, "ms", (E2E,),
           "within 20%, truncated to whole ms", fitted="consumer_poll_p99_ms"),
    Figure("kreps_e2e_p999", KREPS, "End-to-end latency (TestEndToEndLatency)", "p99.9", 14, "ms", (E2E,),
           "within 20%, truncated to whole ms", fitted="stall_interval_ms"),
    Figure("rao_commit_1000", RAO, "Extra commit time, 1,000 vs 10 partitions, one replica fetcher thread",
           "acks=all produce p50 difference", 20, "ms", (COMMIT_1000, COMMIT_10), "within 25%",
           fitted="per_partition_ms"),
    *(Figure(f"fsync_{k}", FSYNC, f"flush.messages=1, {k} partition{'s' if k > 1 else ''}: produce p50 with "
             "flushing minus without", "extra latency", 0.0, "ms", (fsync_run(k, True), fsync_run(k, False)),
             "within 10% of k x flush") for k in FSYNC_PARTITIONS),
)
"""Every figure, in the order of the table."""

RUNS: tuple[Run, ...] = tuple(dict.fromkeys(r for f in FIGURES for r in f.runs))


def throughput(records: pd.DataFrame, warmup_ms: float, duration_ms: float, producer: str | None = None) -> float:
    """Records acknowledged per second after the warm-up (all producers', or one's)."""
    ok = records[(records["outcome"] == "acknowledged") & (records["ack_ms"] > warmup_ms)
                 & (records["ack_ms"] <= duration_ms)]
    if producer is not None:
        ok = ok[ok["producer"] == producer]
    return float(ok["record_count"].sum()) / ((duration_ms - warmup_ms) / 1000.0)


def measure(result: RunResult) -> dict[str, float]:
    """What the figures read from one run: throughput, produce latency from the send, end-to-end latency,
    and the median number of partitions a Produce request carries."""
    s = result.summary
    warmup, duration = float(s["warmup_ms"]), float(s["simulated_duration_ms"])
    out: dict[str, float] = {"throughput": throughput(result.records, warmup, duration),
                             "producer-1 throughput": throughput(result.records, warmup, duration, "producer-1")}
    for stats in (s.get("produce_latency") or {}).values():
        for q in ("p50", "p99"):
            value = stats["from_send"][q]
            if value is not None:
                out[f"produce {q}"] = float(value)
    for q in ("p50", "p99", "p99.9"):
        value = (s.get("e2e_latency") or {}).get(q)
        if value is not None:
            out[f"e2e {q}"] = float(value)
    rq = result.requests
    produce = rq[(rq["api"] == "Produce") & (rq["start_ms"] > warmup)]
    if len(produce):  # the median, as the latencies it explains are medians
        out["partitions per produce"] = float(produce["partitions"].median())
    return out


@dataclass(frozen=True)
class Row:
    figure: Figure
    ours: float
    compared: float
    """What the rule holds against the figure (ours truncated to whole ms where the tool truncated)."""
    target: float
    ratio: float
    met: bool


def _flush_ms() -> float:
    """The 2014 host's time per flush of one ~100-byte batch: its fsync plus writing the dirty bytes."""
    from kafkasim.scenario.distributions import typical_value
    from kafkasim.scenario.hardware import HOST_PRESETS

    disk = HOST_PRESETS["kreps-2014"].disk
    return typical_value(disk["fsync"]) + typical_value(disk["write_per_kib"]) * 0.1  # type: ignore[arg-type]


def evaluate(figure: Figure, measured: dict[str, dict[str, float]]) -> Row:
    """One figure's row from the runs' measurements (by Run.key)."""
    m = [measured[r.key] for r in figure.runs]
    target = figure.published
    if figure.statistic in ("throughput", "producer throughput"):
        ours = m[0]["producer-1 throughput" if figure.statistic == "producer throughput" else "throughput"]
        compared = ours
    elif figure.statistic == "throughput ratio":
        ours = m[0]["producer-1 throughput"] / m[1]["throughput"]
        compared = ours
    elif figure.key.startswith("kreps_e2e"):
        ours = m[0][f"e2e {figure.statistic}"]
        compared = float(math.floor(ours))
    elif figure.key.startswith("rao_"):
        ours = m[0]["produce p50"] - m[1]["produce p50"]
        compared = ours
    else:  # fsync: k flushes of one batch each, k the partitions a request carries
        ours = m[0]["produce p50"] - m[1]["produce p50"]
        compared = ours
        target = m[0]["partitions per produce"] * _flush_ms()
    ratio = compared / target if target else math.inf
    if figure.rule.startswith("within"):
        tolerance = float(figure.rule.split("%")[0].split()[-1]) / 100
        met = abs(ratio - 1) <= tolerance
    else:  # at least 0.95
        met = compared >= float(figure.rule.split()[-1])
    return Row(figure, ours, compared, target, ratio, met)


def _number(value: float, unit: str) -> str:
    if unit == "records/s":
        return f"{value:,.0f}"
    if unit == "x":
        return f"{value:.3f}"
    return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"


def section(data: dict[str, Any]) -> str:
    """The "Published measurements" section of docs/validation.md."""
    by_key = {f.key: f for f in FIGURES}
    rows = data["rows"]
    fitted = [r for r in rows if by_key[r["key"]].fitted]
    predicted = [r for r in rows if not by_key[r["key"]].fitted]
    out = [BEGIN, "## Published measurements", "",
           "Figures published for real Kafka, each rebuilt as a kafkasim scenario on the `kreps-2014` hardware "
           "preset (README, \"Hardware presets\") and run by `docs/make_published.py` "
           f"({data['when']}, kafkasim {data['kafkasim']}; {data['seconds']:.0f} s on {data['machine']}). "
           f"{len(fitted)} values of the preset are the CPU of the post's brokers and clients and the broker JVM's "
           "pauses, which no hardware figure gives: each was fitted to one published figure (marked *fitted*; "
           "`docs/make_published.py --fit`, scipy.optimize). Every other figure is a prediction, nothing fitted "
           f"to it. Met: {sum(r['met'] for r in fitted)} of {len(fitted)} fitted, "
           f"{sum(r['met'] for r in predicted)} of {len(predicted)} predicted.", "",
           "| source | setup | statistic | published | kafkasim | compared | ratio | rule | fitted | met |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        f = by_key[r["key"]]
        published = "k x flush" if f.key.startswith("fsync") else _number(f.published, f.unit)
        target = f" (k x flush = {_number(r['target'], f.unit)} ms)" if f.key.startswith("fsync") else ""
        out.append(f"| {f.source.split(' (')[0]} | {f.setup} | {f.statistic} ({f.unit}) | {published}{target} | "
                   f"{_number(r['ours'], f.unit)} | {_number(r['compared'], f.unit)} | {r['ratio']:.2f} | {f.rule} | "
                   f"{f.fitted or '-'} | {'yes' if r['met'] else 'NO'} |")
    fit = data.get("fit") or {}
    if fit:
        out += ["", "The fitted values (kafkasim.scenario.hardware.KREPS_FITTED holds the same):", "",
                "| value | fitted | to |", "|---|---|---|"]
        for name, entry in fit["values"].items():
            out.append(f"| `{name}` | {entry['value']:.6g} | {entry['to']} |")
    out += ["", "Sources: " + "; ".join(dict.fromkeys(f.source for f in FIGURES)) + ".", "",
            *data.get("notes", []), "",
            "Regenerate: `uv run python docs/make_published.py` (add `--fit` to fit the preset's values first).",
            END]
    return "\n".join(out)


def write_section(page: Path, data: dict[str, Any]) -> None:
    """Put the section into `page`, replacing the one there (or at the end)."""
    write_between(page, BEGIN, END, section(data))
