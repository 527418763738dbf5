"""What a calibration adjusts: kafkasim's simulator-only costs (Kafka has no such configs), each a value in
ms fitted on a log scale between bounds, and how a set of values becomes scenario values (`--set` lines).

| parameter | scenario values it sets | what in a run determines it |
|---|---|---|
| request_ms | broker.costs.request (a lognormal: its median, p99 = median x service_spread) | LocalTimeMs of every API (a request handler's work per request) |
| service_spread | the p99/median of a request handler's costs but the append's (append_spread), and of a replica fetcher's append | LocalTimeMs |
| network_spread | the p99/median of a network thread's costs (network_send, network_complete) | ResponseSendTimeMs, and ResponseQueueTimeMs p99 (a response queued while its network thread works waits for that work) |
| append_ms, append_spread | broker.costs.append (a lognormal: its median, p99/median) | Produce LocalTimeMs beyond a fetch's (each partition's append); its p95 and p99 (an append spreads less than the rest of a request's handling) |
| follower_fetch_ms | broker.costs.follower_fetch (a lognormal with the request's spread) | the request logs' follower update (a parked follower fetch's LocalTimeMs beyond a parked consumer fetch's), FetchFollower LocalTimeMs |
| segment_read_ms | broker.costs.segment_read (a lognormal with the request's spread) | a consumer fetch's LocalTimeMs when it found records beyond one's that parked (kafkasim.calibrate.fetch_read; also the first guess) |
| complete_fetch_ms | broker.costs.complete_fetch (a lognormal with the request's spread) | what completing a consumer's fetch adds to a follower fetch's LocalTimeMs (kafkasim.calibrate.completion; also the first guess), end-to-end latency (a parked fetch answered by the request that woke it, after that work); at acks=all a parked produce a follower fetch completes costs it too, not fitted apart (no produce parks at acks=1) |
| send_ms | broker.costs.network_send (a lognormal with the network threads' spread) | ResponseSendTimeMs (a network thread writing a response) |
| complete_ms | broker.costs.network_complete (a lognormal with the network threads' spread) | the request logs' produce read after a response (kafkasim.calibrate.pipelined: a network thread's work once a response is written, updateRequestMetrics and the request log's line, before it reads the connection's next request), ResponseQueueTimeMs (a response queued meanwhile waits) |
| wakeup_median_ms, wakeup_spread | broker.costs.wakeup (a lognormal: its median, p99/median) | RequestQueueTimeMs and ResponseQueueTimeMs (a woken thread waiting for a core; the spread is the network threads', handler_wakeup_spread the handlers'); first guesses from a consumer fetch's RequestQueueTimeMs p50 and p99 |
| handler_wakeup_spread | broker.costs.handler_wakeup (a lognormal: wakeup_median_ms, p99/median) | RequestQueueTimeMs p95 and p99 beside ResponseQueueTimeMs's: a request's wait runs from the network thread's stamp, before it parses the request (and builds the request log's JSON), to a handler's take, where a response's is a woken network thread's |
| wakeup_per_thread_ms | machine_wakeup_per_thread | RequestQueueTimeMs and ResponseQueueTimeMs p50 of each API: a consumer's fetch mostly arrives when no broker thread runs, an acks=1 produce's response is queued while its handler goes on (kafkasim.sim.machine_load) |
| wakeup_scale_per_thread | machine_wakeup_scale_per_thread | RequestQueueTimeMs p95 and p99 of each API: how much longer a woken request handler's own wait is for each thread of the machine running then (its long waits come more often on a busy machine: a consumer's fetch mostly arrives when none runs; a network thread's wait does not scale) |
| fetcher_weight | machine_fetcher_weight | the request logs' produce queue in a turnaround (a produce's RequestQueueTimeMs p50 when it arrived while a follower was between the leader's answer and its next fetch; kafkasim.calibrate.turnaround): how many of the machine's running threads a replica fetcher counts for while it appends |
| preempt_every_ms | machine_preemption.every | the p99 of LocalTimeMs and ResponseSendTimeMs of each API: how much of a thread's work comes, on average, between two waits for a core (kafkasim.sim.preemption) |
| preempt_wait_ms, preempt_wait_spread | machine_preemption.wait (a lognormal: its median, p99/median) | the same p99s: how long a wait for a core lasts |
| preempt_per_thread | machine_preemption.per_running_thread | the same p99s of each API: how much more often a thread's work waits for a core for each other thread of the machine at work (a consumer fetch is mostly handled when none is, a follower fetch while the other follower appends) |
| follower_append_ms | followers.costs.append (a lognormal with the request's spread) | the request logs' follower turnaround beside the follower link, and the queue times of the requests that arrive while the followers append (a replica fetcher's work counts among the machine's running threads) |
| cold_start_ms, cold_start_grace_ms, cold_start_ramp_ms | machine_cold_start (cost, grace, ramp) | the request logs' produce after idle (a produce's LocalTimeMs when the handlers had been idle 3 ms or more, beyond one's taken within 0.6 ms of their last work; kafkasim.calibrate.after_idle) and the cores the threads use: work a thread starts after being idle costs more (kafkasim.sim.cold_start) |
| link_median_ms, link_spread | network.default_link.latency and every producer's link (lognormal median, p99 = median x spread) | produce latency beyond the broker's TotalTimeMs |
| consumer_link_median_ms | every consumer's link (lognormal median, the same spread) | end-to-end latency beyond produce latency (a consumer's fetch round trip) |
| follower_link_median_ms | followers.link.latency (lognormal median, the same spread) | the request logs' follower turnaround (kafkasim.calibrate.turnaround), end-to-end latency beyond produce latency (the followers' round trip that moves the high watermark) |
| stall_interval_ms, stall_median_ms, stall_spread | machine_stalls (exponential interval; lognormal pause, p99 = median x spread) | the tails (p99) of every phase: the JVMs' collections, the machine's shared cores |
| client_stall_interval_ms, client_stall_median_ms | clients_stalls (the brokers' spread): the stalls of the one process every client runs in | the tails of produce and end-to-end latency |
| producer_request_ms | every producer's costs.per_request | produce latency beyond the request's round trip |
| consumer_record_ms | every consumer's costs.per_record | end-to-end latency beyond the produce latency |

Every cost is a lognormal body; the waits for a core in the middle of a thread's work come on top of them, as the
machine's (`machine_preemption`): one per `preempt_every_ms` of a request handler's or a network thread's work on
average, each a lognormal wait. A thread's long work waits more often than its short work, as on the real cluster: a
produce's LocalTimeMs (a handler's ~0.16 ms) was above 0.4 ms one time in twenty, a consumer fetch's (~0.05 ms) one
time in seventy (the medians of three runs). Until 2026-12-01 each step (the request cost, a completion, the send,
the wake-up) was a mixture: its body and, for a share of the draws, a tail whose median was a fixed time longer.
That drew a wait as often for a short step as for a long one, and the tail's wait, longer than any body, left the
p90-p98 of every phase at its body's and its p99 at a whole wait: a consumer fetch's LocalTimeMs p99 0.90 times
Kafka's where a produce's and a follower fetch's were 1.25 and 1.34, and every phase's p95 0.28-0.72 times Kafka's
(docs/calibration.md, "What is left out"). A woken thread's wait is one lognormal: its spread (~20) reproduces the
real queue times from p50 to p99.5.

A stall stands for whatever stops a JVM's threads for a while: garbage collection, and on a machine where the
cluster's JVMs share few cores, the time a runnable thread waits for one (kafkasim.scenario.stalls). The
brokers' stalls are the machine's (`machine_stalls`: each stops every broker at once), because the real ones
come together: on this project's machine the two followers' long pauses between fetches overlapped 21-35% of
the time against 4-5% by chance, and with a stall process per broker the fitted run's end-to-end p50 was 1.12
times Kafka's, as a record's way to its consumer crosses three brokers' stalls. One more process is fitted
for the clients, and it is one for all of them (`clients_stalls`: each stall stops every producer and consumer
at once), because the real ones run in one JVM (kafkasim's LoadDriver) and stall together: at acks=all a real
record's end-to-end latency was more than 5 ms beyond its produce latency for 0-0.12% of the records (three runs),
where with a stall process per client 1.4-2.1% of kafkasim's were, their consumer stalled alone (a produce p99
short of Kafka's, an end-to-end p99 beyond it). A client's link latency stands for
everything between its application and the broker's socket that kafkasim does not model apart: its network
thread's wake-ups as much as the wire. Where the real runs kept their GC logs, each broker's own collector comes
on top, measured rather than fitted (kafkasim.calibrate.collector): a pause after so many of its requests, which
the machine's stalls then need not stand for.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafkasim.scenario import Scenario

if TYPE_CHECKING:
    from kafkasim.calibrate.collector import Collector


@dataclass(frozen=True)
class Parameter:
    name: str
    low: float
    high: float
    start: float
    unit: str
    fitted_from: str

    def clipped(self, value: float) -> float:
        return min(max(value, self.low), self.high)


PARAMETERS: tuple[Parameter, ...] = (
    Parameter("request_ms", 0.001, 20.0, 0.05, "ms", "LocalTimeMs of Produce, FetchFollower, FetchConsumer"),
    Parameter("service_spread", 1.05, 500.0, 3.0, "x", "LocalTimeMs p95 and p99 (a request handler's work)"),
    Parameter("network_spread", 1.05, 500.0, 3.0, "x",
              "ResponseSendTimeMs p95 and p99, ResponseQueueTimeMs p99 (a network thread's work: a send and what "
              "follows it)"),
    Parameter("append_ms", 0.0001, 10.0, 0.05, "ms", "Produce LocalTimeMs beyond a fetch's (per partition appended)"),
    Parameter("append_spread", 1.05, 500.0, 3.0, "x", "Produce LocalTimeMs p95 and p99 (an append's own spread)"),
    Parameter("follower_fetch_ms", 0.0001, 10.0, 0.02, "ms",
              "a parked follower fetch's LocalTimeMs beyond a parked consumer fetch's (the request logs' follower "
              "update, also the first guess), FetchFollower LocalTimeMs"),
    Parameter("segment_read_ms", 0.0001, 10.0, 0.02, "ms",
              "a consumer fetch's LocalTimeMs when it found records beyond one's that parked (the request logs' "
              "fetch read, also the first guess)"),
    Parameter("complete_fetch_ms", 0.0001, 10.0, 0.05, "ms",
              "a follower fetch's LocalTimeMs beyond an idle one's when it completes a consumer's (the request "
              "logs' consumer completion, also the first guess), end-to-end latency"),
    Parameter("send_ms", 0.001, 20.0, 0.01, "ms", "ResponseSendTimeMs"),
    Parameter("complete_ms", 0.001, 20.0, 0.1, "ms",
              "the request logs' produce read after a response (a network thread's work once a response is written, "
              "before it reads the connection's next request), ResponseQueueTimeMs"),
    Parameter("wakeup_median_ms", 0.0005, 20.0, 0.01, "ms", "RequestQueueTimeMs, ResponseQueueTimeMs p50"),
    Parameter("wakeup_spread", 1.05, 500.0, 3.0, "x", "ResponseQueueTimeMs (a woken network thread's wait)"),
    Parameter("handler_wakeup_spread", 1.05, 500.0, 3.0, "x",
              "RequestQueueTimeMs p95 and p99 beside ResponseQueueTimeMs's (a request's wait from the network "
              "thread's stamp to a handler's take, beyond a woken network thread's)"),
    Parameter("wakeup_per_thread_ms", 0.0001, 5.0, 0.02, "ms",
              "RequestQueueTimeMs, ResponseQueueTimeMs p50 of each API (a woken thread waits longer the more "
              "threads of the machine run)"),
    Parameter("wakeup_scale_per_thread", 0.001, 100.0, 1.0, "x",
              "RequestQueueTimeMs p95 and p99 of each API (a woken request handler's own wait is longer for each "
              "thread of the machine running then)"),
    Parameter("fetcher_weight", 0.01, 100.0, 1.0, "x",
              "the request logs' produce queue in a turnaround (how many of the machine's running threads a replica "
              "fetcher counts for while it appends)"),
    Parameter("preempt_every_ms", 0.01, 10_000.0, 2.0, "ms",
              "p99 of LocalTimeMs and ResponseSendTimeMs of each API (how much of a thread's work comes between two "
              "waits for a core)"),
    Parameter("preempt_wait_ms", 0.005, 100.0, 0.2, "ms",
              "p99 of LocalTimeMs and ResponseSendTimeMs (how long a wait for a core lasts)"),
    Parameter("preempt_wait_spread", 1.05, 100.0, 4.0, "x",
              "p99 of LocalTimeMs and ResponseSendTimeMs (the spread of the waits for a core)"),
    Parameter("preempt_per_thread", 0.001, 100.0, 1.0, "x",
              "p99 of LocalTimeMs and ResponseSendTimeMs of each API (how much more often a thread's work waits for a "
              "core for each other thread of the machine at work)"),
    Parameter("follower_append_ms", 0.0001, 10.0, 0.05, "ms",
              "the request logs' follower turnaround beside the follower link, RequestQueueTimeMs p50 of each API "
              "(a replica fetcher appending is one of the machine's running threads)"),
    Parameter("cold_start_ms", 0.0001, 10.0, 0.2, "ms",
              "the request logs' produce after idle (a produce's LocalTimeMs when the handlers had been idle 3 ms "
              "or more, beyond one's taken within 0.6 ms of their last work), the cores (work after idle costs "
              "more)"),
    Parameter("cold_start_grace_ms", 0.01, 100.0, 0.5, "ms",
              "LocalTimeMs and ResponseSendTimeMs p50s beside the request logs' produce after idle (how long an idle "
              "thread stays warm)"),
    Parameter("cold_start_ramp_ms", 0.05, 1000.0, 3.5, "ms",
              "the request logs' produce after idle beside the LocalTimeMs p50s (how soon an idle thread's caches "
              "go cold after the grace)"),
    Parameter("link_median_ms", 0.005, 50.0, 0.25, "ms", "produce and end-to-end latency beyond TotalTimeMs"),
    Parameter("link_spread", 1.05, 200.0, 4.0, "x", "produce and end-to-end p99 beyond TotalTimeMs p99"),
    Parameter("consumer_link_median_ms", 0.005, 50.0, 0.1, "ms", "end-to-end latency beyond produce latency"),
    Parameter("follower_link_median_ms", 0.005, 50.0, 0.1, "ms",
              "the request logs' follower turnaround (a response sent to the next fetch's arrival), end-to-end "
              "latency beyond produce latency"),
    Parameter("stall_interval_ms", 10.0, 600_000.0, 2000.0, "ms", "p99 of every phase (stall frequency)"),
    Parameter("stall_median_ms", 0.01, 2000.0, 5.0, "ms", "p99 of every phase (stall length)"),
    Parameter("stall_spread", 1.05, 100.0, 4.0, "x", "p99 of every phase (spread of stall lengths)"),
    Parameter("client_stall_interval_ms", 10.0, 600_000.0, 2000.0, "ms", "produce and end-to-end p99"),
    Parameter("client_stall_median_ms", 0.01, 2000.0, 5.0, "ms", "produce and end-to-end p99"),
    Parameter("producer_request_ms", 0.001, 50.0, 0.05, "ms", "produce latency beyond the request's round trip"),
    Parameter("consumer_record_ms", 0.0001, 20.0, 0.005, "ms", "end-to-end latency beyond produce latency"),
)
BY_NAME = {p.name: p for p in PARAMETERS}
WAS = {"handler_wakeup_spread": "wakeup_spread", "network_spread": "service_spread"}
"""A parameter that a preset written before it existed held as another's value: the request handlers drew their
wake-up from `broker.costs.wakeup` until `broker.costs.handler_wakeup` (2026-12-03), so such a preset's
handler spread is its `wakeup_spread`; the network threads' costs spread as the handlers' until `network_spread`
(2026-12-04), so such a preset's is its `service_spread`. A refit from it starts where it left off."""


def to_log(values: dict[str, float]) -> list[float]:
    return [math.log(values[p.name]) for p in PARAMETERS]


def from_log(theta: list[float]) -> dict[str, float]:
    return {p.name: p.clipped(math.exp(t)) for p, t in zip(PARAMETERS, theta, strict=True)}


def _ms(value: float) -> str:
    """A duration as a scenario writes it, exact enough to load back the same float."""
    return f"{value!r}ms"


def _lognormal(median: float, spread: float) -> str:
    return f"{{type: lognormal, median: {_ms(median)}, p99: {_ms(median * spread)}}}"


def overrides(values: dict[str, float], scenario: Scenario, collector: Collector | None = None) -> list[str]:
    """The `--set` lines that give `scenario` these parameter values (one per scenario key, every producer
    and consumer of the scenario included), and every broker the measured `collector`'s stalls (not a parameter:
    kafkasim.calibrate.collector)."""
    v = values
    latency = _lognormal(v["link_median_ms"], v["link_spread"])
    stalls = (f"{{interval: {{type: exponential, mean: {_ms(v['stall_interval_ms'])}}}, "
              f"pause: {_lognormal(v['stall_median_ms'], v['stall_spread'])}}}")
    client_stalls = (f"{{interval: {{type: exponential, mean: {_ms(v['client_stall_interval_ms'])}}}, "
                     f"pause: {_lognormal(v['client_stall_median_ms'], v['stall_spread'])}}}")
    lines = [
        # Every handler cost spreads alike: on a real broker an append or a follower's bookkeeping is slowed by
        # the same GC, scheduling and cache misses as the rest of the request (a constant here left a produce's
        # and a follower fetch's LocalTimeMs p99 to the fixed part, which the fit then inflated). The waits for a
        # core come on top, the more often the longer the work (machine_preemption, below).
        f"broker.costs.request={_lognormal(v['request_ms'], v['service_spread'])}",
        # Except the append's, which spreads less: with it as wide as the rest, a produce's LocalTimeMs p95 and p99
        # were 1.34-1.42 times Kafka's while a consumer fetch's were within 20% (docs/calibration.md).
        f"broker.costs.append={_lognormal(v['append_ms'], v['append_spread'])}",
        f"broker.costs.follower_fetch={_lognormal(v['follower_fetch_ms'], v['service_spread'])}",
        f"broker.costs.complete_fetch={_lognormal(v['complete_fetch_ms'], v['service_spread'])}",
        f"broker.costs.segment_read={_lognormal(v['segment_read_ms'], v['service_spread'])}",
        # A network thread's work spreads apart from a handler's (socket writes and the request log's line against
        # an API's handling): with one spread for both, the fitted run's ResponseSendTimeMs p99s were 1.14-1.41
        # times Kafka's while the LocalTimeMs p99s were 0.69-0.85 (docs/calibration.md, "Two spreads").
        f"broker.costs.network_send={_lognormal(v['send_ms'], v['network_spread'])}",
        # What the real brokers' network threads do once a response is written: Kafka's request log, which these
        # presets are fitted from, is written then (Processor.processCompletedSends).
        f"broker.costs.network_complete={_lognormal(v['complete_ms'], v['network_spread'])}",
        f"broker.costs.wakeup={_lognormal(v['wakeup_median_ms'], v['wakeup_spread'])}",
        # A request handler's own wait, from the network thread's stamp (before it parses the request and, with
        # the request log on, builds its JSON) to the handler's take: the same median, its own spread.
        f"broker.costs.handler_wakeup={_lognormal(v['wakeup_median_ms'], v['handler_wakeup_spread'])}",
        f"machine_wakeup_per_thread={_ms(v['wakeup_per_thread_ms'])}",
        f"machine_wakeup_scale_per_thread={v['wakeup_scale_per_thread']!r}",
        f"machine_fetcher_weight={v['fetcher_weight']!r}",
        f"machine_preemption={{every: {_ms(v['preempt_every_ms'])}, "
        f"wait: {_lognormal(v['preempt_wait_ms'], v['preempt_wait_spread'])}, "
        f"per_running_thread: {v['preempt_per_thread']!r}}}",
        # Not a parameter: on the machine these presets are fitted on, a handler goes on to the fetches its request
        # completed only after the response it queued is sent (the request logs' completion gap, 0.19-0.24 ms).
        "machine_wakeup_preempts=true",
        # Not set (machine_wakeup_waits, 0): in 27-31% of them the real network thread waited for the handler to
        # finish them instead (kafkasim.sim.machine_load), but fitted with that share the fit came out worse on
        # every count (docs/calibration.md, "Quiet runs": D).
        # Not a parameter: a real broker's Acceptor goes round robin over every connection it accepts (admin
        # clients', bootstrap and metadata connections among them), so the real runs' layouts of the clients'
        # and followers' connections over the network threads vary from run to run (three in three runs of
        # 2026-12-04): each connection's thread is drawn, and the fit's runs of several seeds see several. The real
        # ones keep the followers apart, and the producer from the consumer (fourteen runs of 2026-12-04), as
        # `groups` does, but fitted so (G13, G14) the fitted run came out worse (a sum of squares of 1.27 against
        # 1.12, its responses' ResponseQueueTimeMs p95s 0.58-0.77 of Kafka's): the drawn layouts' shared threads
        # stand for queueing of the responses that kafkasim does not otherwise have (docs/calibration.md).
        "broker.connection_layout=random",
        f"machine_stalls={stalls}",
        # Each broker's own collector, measured from the leader's GC log: a pause after so many of its requests.
        *([f"broker.stalls={collector.stalls()}"] if collector is not None else []),
        f"network.default_link.latency={latency}",
        # Every client's own link too: a result's scenario.yaml writes each one out (kafkasim dumps the
        # resolved scenario), so the default alone would reach none of them.
        f"followers.link.latency={_lognormal(v['follower_link_median_ms'], v['link_spread'])}",
        # A replica fetcher's append of what a fetch brought: its thread's work, counted among the machine's
        # running threads (kafkasim.sim.machine_load), where the follower link is the wire.
        f"followers.costs.append={_lognormal(v['follower_append_ms'], v['service_spread'])}",
        # Work a thread starts after being idle costs more: its caches went cold (kafkasim.sim.cold_start).
        f"machine_cold_start={{cost: {_ms(v['cold_start_ms'])}, grace: {_ms(v['cold_start_grace_ms'])}, "
        f"ramp: {_ms(v['cold_start_ramp_ms'])}}}",
    ]
    for i in range(len(scenario.producers)):
        lines += [f"producers[{i}].link.latency={latency}",
                  f"producers[{i}].costs.per_request={_ms(v['producer_request_ms'])}"]
    for i in range(len(scenario.consumers)):
        lines += [f"consumers[{i}].link.latency={_lognormal(v['consumer_link_median_ms'], v['link_spread'])}",
                  f"consumers[{i}].costs.per_record={_ms(v['consumer_record_ms'])}"]
    # The clients' one process (kafkasim's LoadDriver runs every client in one JVM): a stall stops them all.
    lines.append(f"clients_stalls={client_stalls}")
    return lines


def min_evaluations(free: int) -> int:
    """The fewest simulated runs in which a fit of `free` parameters takes a step: the start and its Jacobian
    (free + 1 runs), then a step and the Jacobian there. scipy's trust-region loop stops before its first step
    when its budget of function evaluations is 1 (scipy.optimize._lsq.trf.trf_bounds), so a smaller budget
    would return the start as if it were fitted."""
    return 2 * (free + 1)
