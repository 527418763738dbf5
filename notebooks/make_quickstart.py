"""Writes notebooks/quickstart.ipynb (run `uv run --extra dev python notebooks/make_quickstart.py` after
editing).

The notebook is kept as this script so that its text can be reviewed and diffed as Python; the script runs
it and saves it with its outputs, so that it reads well where it is viewed without running it.
tests/notebooks/test_quickstart_notebook.py executes it headless.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from notebook_builder import build_notebook, execute_notebook, write_notebook

NOTEBOOK = Path(__file__).resolve().parent / "quickstart.ipynb"

CELLS: list[tuple[str, str]] = [
    ("md", """\
# kafkasim quickstart

kafkasim simulates how **one Kafka broker handles requests**: producers append to a partition on the
leader, followers fetch to copy the log, consumers long-poll for data below the high watermark, and
requests that cannot be answered at once wait in a *purgatory* on Kafka's hierarchical timing wheel.
Time is simulated (SimPy), so a 30-second scenario runs in seconds and the same seed gives the same
result, byte for byte.

This notebook runs `scenarios/quickstart.yaml` from Python, shows the summary and the figures, and
explains what each one shows. The command-line equivalent is `kafkasim run scenarios/quickstart.yaml`."""),
    ("code", """\
from pathlib import Path

import pandas as pd

import kafkasim

ROOT = Path.cwd() if (Path.cwd() / "scenarios").is_dir() else Path.cwd().parent
scenario = kafkasim.load_scenario(ROOT / "scenarios" / "quickstart.yaml")
print(scenario.description)"""),
    ("md", """\
## Run it

A scenario is a validated model. `with_overrides` changes any key the way the CLI's `--set` does
(Kafka's own key names, human units); here we shorten the run to keep the notebook quick.
`run_scenario` returns a `RunResult` with three tables and a summary."""),
    ("code", """\
short = kafkasim.with_overrides(scenario, ["duration=6s", "warmup=1s"])
result = kafkasim.run_scenario(short)
result"""),
    ("md", """\
## The summary: Kafka's request-time breakdown

Every request is timestamped the way Kafka's `RequestMetrics` does it, and its `TotalTimeMs` split
into the same phases (Kafka's `RequestChannel.Request.updateRequestMetrics`):

| phase | what the request is doing |
|---|---|
| `RequestQueueTimeMs` | waiting in the broker's request queue for a free request-handler thread |
| `LocalTimeMs` | being handled on that thread: the log append, or the read of a fetch |
| `RemoteTimeMs` | parked in a purgatory: acks=all waiting for followers, a fetch waiting for data |
| `ResponseQueueTimeMs` | the finished response waiting for its network thread |
| `ResponseSendTimeMs` | the network thread writing the response |

`client_latency_ms` is what the client saw: from sending the request to receiving the response,
network included. The table shows the median (p50) and p99 of each, per API, after the warm-up."""),
    ("code", """\
phases = ["RequestQueueTimeMs", "LocalTimeMs", "RemoteTimeMs", "ResponseQueueTimeMs",
          "ResponseSendTimeMs", "TotalTimeMs", "client_latency_ms"]
table = pd.DataFrame(
    {(api, q): [stats[p][q] for p in phases]
     for api, stats in result.summary["apis"].items() for q in ("p50", "p99")},
    index=phases,
)
table.round(3)"""),
    ("md", """\
For acks=all produces almost all of `TotalTimeMs` is `RemoteTimeMs`: the append is done in a
fraction of a millisecond, and then the request waits in the produce purgatory until both followers
have fetched the batch and the high watermark has passed it.

Produce latency is also measured per batch **from the intended send time** of its first record: the
load is open loop (records arrive on their own schedule, whatever the broker does), so time spent
in the producer (linger.ms, waiting for a free in-flight slot) counts. End-to-end latency runs from
that intended time until the consumer received the record."""),
    ("code", """\
rows = {f"produce {acks}": stats["from_intended"] for acks, stats in result.summary["produce_latency"].items()}
rows["end to end"] = result.summary["e2e_latency"]
pd.DataFrame(rows).T[["count", "p50", "p99", "max"]].round(3)"""),
    ("md", """\
## Figures

The `kafkasim.report` functions take the run's tables and return matplotlib figures; `write_figures`
writes all of them as PNGs (the CLI puts them in the result directory). Here we show them inline."""),
    ("code", """\
from io import BytesIO

from IPython.display import Image, display

from kafkasim.report import (
    latency_cdf_figure,
    log_offsets_figure,
    produce_swimlane_figure,
    request_breakdown_figure,
)


def show(figure):
    buffer = BytesIO()
    figure.savefig(buffer, format="png", dpi=90)
    display(Image(buffer.getvalue()))


requests, records, timeseries, summary = result.requests, result.records, result.timeseries, result.summary"""),
    ("md", """\
### Latency by percentile

Left: the broker's `TotalTimeMs` per API. Right: what the producer saw (from the intended send time)
and end-to-end latency. The x axis stretches the tail (p90, p99, p99.9 are evenly spaced), because
the tail is where latency problems live. Follower and consumer fetches are long polls: their time is
mostly waiting for the next batch, not slowness."""),
    ("code", "show(latency_cdf_figure(requests, records, summary))"),
    ("md", """\
### Where the time goes

One stacked bar per API: the five phases above, mean and p99. For `Produce` it is nearly all
`RemoteTimeMs` (waiting for the followers); a large `RequestQueueTimeMs` would instead mean the
request handler threads are the bottleneck (see `scenarios/overloaded_handlers.yaml`)."""),
    ("code", "show(request_breakdown_figure(requests, summary))"),
    ("md", """\
### High watermark and log end offsets

Every replica's log end offset (LEO) and the high watermark (HW) over time. The HW is the minimum LEO
over the in-sync replicas (Kafka's `Partition.maybeIncrementLeaderHW`), so it can only step up once the
slowest in-sync follower has fetched. The lower panel shows LEO − HW: records written but not yet committed,
i.e. not yet visible to consumers nor acknowledged to acks=all producers."""),
    ("code", "show(log_offsets_figure(timeseries, summary))"),
    ("md", """\
### The life of one produce request

A swimlane of one acks=all produce (the one closest to the median): the producer sends it, the
network thread reads it, a handler thread appends it, it waits in the produce purgatory; meanwhile
both followers' parked fetches are completed by the append, each follower copies the batch and
fetches again, and that second fetch moves the high watermark (dashed line), which completes the
produce. The consumer's parked fetch wakes up at the same moment: the HW move completes both (Kafka's
`Partition.tryCompleteDelayedRequests`)."""),
    ("code", "show(produce_swimlane_figure(requests, records, timeseries, summary))"),
    ("md", """\
## Wall-clock pacing

By default simulated time runs as fast as the computer can go. The clock can also be paced against the
wall clock, and switched on and off while the run is going (say, to watch a few hundred milliseconds
of a live view). Pacing only inserts sleeps between events, so the run is identical either way.

Below we pass our own `SimClock` and schedule two events on its SimPy environment: at 1.0 s of
simulated time switch to real-time pacing, at 1.3 s switch back."""),
    ("code", """\
import time

from kafkasim.sim.clock import SimClock

paced_scenario = kafkasim.with_overrides(scenario, ["duration=2s", "warmup=500ms"])
clock = SimClock()
clock.env.timeout(1_000).callbacks.append(lambda _event: clock.set_wallclock(speed=1.0))
clock.env.timeout(1_300).callbacks.append(lambda _event: clock.set_virtual())

started = time.perf_counter()
paced = kafkasim.run_scenario(paced_scenario, clock=clock)
paced_wall = time.perf_counter() - started

started = time.perf_counter()
virtual = kafkasim.run_scenario(paced_scenario)
virtual_wall = time.perf_counter() - started

print(f"with 300 ms paced: {paced_wall:.2f} s of wall time; fully virtual: {virtual_wall:.2f} s")
print("same requests, same timings:", paced.requests.equals(virtual.requests))"""),
    ("md", """\
## Where next

* The other scenarios in `scenarios/` each teach one thing (acks compared, a slow follower leaving
  the ISR, min.insync.replicas violated, fetch.min.bytes vs fetch.max.wait.ms, segment rolls waking
  parked fetches, overloaded request handlers, a GC-paused follower). Their `description` says what
  to look for.
* `kafkasim run <scenario> --set key=value` runs a scenario from the shell and saves its tables;
  `kafkasim report <result dir>` draws its figures and report.html; `kafkasim wheel` walks through the
  timing wheel step by step."""),
]


def build() -> nbformat.NotebookNode:
    return build_notebook(CELLS)


def main() -> None:
    # Stored with its outputs, so that it reads well where it is viewed without running it.
    write_notebook(NOTEBOOK, execute_notebook(build(), NOTEBOOK.parent, timeout=180))


if __name__ == "__main__":
    main()
