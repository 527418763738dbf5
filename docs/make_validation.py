"""Writes docs/validation.md: every scenario of the differential suite on kafkasim and on Apache Kafka, side by side.

    uv run python docs/make_validation.py                 # runs the differential suite first (~8 min, 4 JVMs)
    uv run python docs/make_validation.py --spool ROWS    # from the agreement rows of an earlier run

The differential suite (tests/real/test_differential.py) runs each scenario on both engines and writes one
agreement row per comparison (tests/real/agreement.py). This script runs it with the rows spooled to a file
(or reads such a file: ``KAFKASIM_AGREEMENT_SPOOL=ROWS uv run pytest tests/real/test_differential.py`` keeps
one), then writes one section per scenario: what the scenario shows, what differs between the engines and why,
in plain words (``EXPLAINED`` below, kept by hand: a scenario added to the suite without words here is an
error), and the rows themselves. tests/docs/test_validation_doc.py holds the page to the suite.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from collections import Counter
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "validation.md"
sys.path.insert(0, str(ROOT))

from kafkasim import KAFKA_VERSION  # noqa: E402
from kafkasim.calibrate import published  # noqa: E402
from kafkasim.calibrate.held_out import JSON_FILE, section  # noqa: E402
from kafkasim.calibrate.later_check import check_section  # noqa: E402
from tests.real.agreement import SPOOL_ENV, Agreement  # noqa: E402

# scenario key (tests/real/test_differential.py's SCENARIOS) -> (what it shows, what differs and why)
EXPLAINED: dict[str, tuple[str, str]] = {
    "fetch_min_bytes_vs_max_wait": (
        "Three consumers of one topic: one whose `fetch.min.bytes` is never met waits `fetch.max.wait.ms` "
        "(500 ms) in the fetch purgatory on every request; one with `fetch.min.bytes` 1 is answered as soon as "
        "a record arrives; one asking for 32 KiB waits until that much has been appended (DelayedFetch's "
        "tryComplete).",
        "Nothing a timer or rule decides. The real broker adds a few milliseconds of scheduling to each wait "
        "(five JVMs on two cores); the batched consumer's wait follows the producer's arrivals on both."),
    "segment_roll_wakes_fetches": (
        "Idle followers long-poll the leader at the `replica.fetch.wait.max.ms` cadence (500 ms), so each "
        "follower sends two FetchFollower requests per second; request counts per API per second of a steady "
        "workload.",
        "Request counts agree within a few per cent. The real run's Produce rate is a little lower: its load "
        "driver's sends fall behind their intended times on a loaded machine, so more records share a batch."),
    "segment_rolls_1mib": (
        "Kafka's smallest segment (1 MiB) at 400 KiB/s rolls every ~2.6 s. A fetch parked in the purgatory at "
        "the end of the active segment is woken by the roll (DelayedFetch.tryComplete: the fetch offset is on an "
        "older segment than the log end), on followers and consumers alike.",
        "None: the same rolls and every parked fetch woken by each on both."),
    "acks_compared": (
        "Producers with acks=0, acks=1 and acks=all side by side: an acks=all produce completes only after a "
        "follower fetch that arrived after the append (DelayedProduce), an acks=1 produce never waits in the "
        "purgatory.",
        "The order of events agrees. Latencies differ by an order of magnitude and are reported, not "
        "asserted: the real p50/p99 is JIT compilation, garbage collection and five JVMs sharing two cores "
        "(the load average is in the quickstart's rows); kafkasim's default costs model a quiet broker. "
        "Calibrating those costs to a measured cluster is the calibration work's, not a rule gap."),
    "quickstart": (
        "The README's first scenario: one producer at acks=all, RF 3; two FetchFollower requests per Produce "
        "request (each follower fetches once to copy a batch, then long-polls).",
        "The ratio agrees exactly. Latencies are reported side by side (see acks_compared for why they differ)."),
    "leader_crash": (
        "The leader of every partition is SIGKILLed. The controller fences it broker.session.timeout.ms (9 s) "
        "after its last heartbeat, within one run of the fence check (every session timeout / 8, 1,125 ms), "
        "and elects a new leader from the ISR in the same event; the producer finds it at its next metadata "
        "refresh and nothing acknowledged at acks=all is lost.",
        "Where the crash falls between two heartbeats, the fence check's phase and the producer's metadata "
        "backoff are draws, so the real run is compared with kafkasim's range over ten seeds, never with one "
        "draw. Four real runs measured 225, 851, 1,113 and 1,204 ms from the fence to the first "
        "acknowledgement against kafkasim's 46-795 ms over ten seeds: the real figure also carries the "
        "brokers' metadata propagation (tens of ms to ~150 ms on this machine, which leader_crash.yaml leaves "
        "at its quiet-broker defaults) and the wait for a CPU, so it sits at or above the top of kafkasim's "
        "range."),
    "follower_crash_fenced": (
        "A follower is SIGKILLed: it stays in the ISR until the controller fences it, so every acks=all produce "
        "waits in the purgatory until the fence (7-10 s after the crash by the timers). Restarted, its new "
        "process registers, loads its logs and is unfenced once it reports itself caught up.",
        "Where the crash falls between heartbeats (a draw on both). How long the restart takes is this "
        "machine's: kafkasim's broker.startup defaults were measured here (a JVM's start and "
        "BrokerServer.startup up to the registration, then the logs loaded by the first metadata publish); the "
        "real figure grows with the machine's load."),
    "gc_paused_follower": (
        "A follower is paused (SIGSTOP, as a long GC pause) for 3 s: acks=all produces wait in the purgatory "
        "for the pause; 3 s is shorter than the session timeout, so the follower is not fenced.",
        "None: the hold matches the pause on both."),
    "leader_controlled_shutdown": (
        "The leader is stopped with SIGTERM: a controlled shutdown moves its leaderships before it stops "
        "(BrokerLifecycleManager, the controller's handleBrokerShutdown); clients get NOT_LEADER_OR_FOLLOWER "
        "and move; nothing acknowledged is lost.",
        "Brokers apply a leadership change at different times (their MetadataLoader publishes the batch, then "
        "ReplicaManager.applyDelta runs): the old leader holds acks=all produce in its purgatory until it "
        "applied the change, and a follower that fetches from the new leader before it leads is answered "
        "UNKNOWN_LEADER_EPOCH and backs off replica.fetch.backoff.ms, 1 s (AbstractFetcherThread). Which "
        "happens is a draw: the real cluster held produce 118 ms to 1,041 ms across runs. kafkasim held it "
        "3-5 ms until the scenario was given the propagation and apply times measured on this cluster "
        "(`controller.metadata_propagation` and `metadata_apply`); now its ten seeds show both outcomes. "
        "The old leader's last request comes later after SIGTERM on the real broker (a JVM's shutdown "
        "hooks), reported only."),
    "unclean_acks1_crashes": (
        "Both followers crash, the leader alone acknowledges acks=1 records, then crashes too; a follower that "
        "lacks them becomes leader (unclean.leader.election.enable): the acknowledged records of that window "
        "are lost, read from every partition's final log on both.",
        "How many records are lost depends on how long the lone leader ran, a draw of the fault timing against "
        "the arrivals; both lose a comparable number and elect the same way."),
    "elr_paused_followers": (
        "Kafka 4.x's eligible leader replicas (KIP-966): followers leave the ISR into the ELR while paused, the "
        "leader is killed, and the controller elects a leader from the ELR; acks=1 records only the old leader "
        "had are lost, nothing acknowledged at acks=all is.",
        "None in kind: one election from the ELR on both, at the same time after the kill within the fence's "
        "draw, and a comparable loss."),
    "idempotence_paused_leader": (
        "The leader is paused longer than request.timeout.ms: the producers' requests time out and are sent "
        "again. The idempotent producer writes nothing twice (ProducerStateManager's sequence check); the one "
        "without idempotence may.",
        "Both write the not-idempotent producer's retried batches twice: the broker, once resumed, still reads "
        "what the client had sent before closing the timed-out connection (it waits in the socket ahead of "
        "the FIN; Kafka's Selector processes the receives of a channel its peer closed) and appends it beside "
        "the retries. kafkasim wrote none until this suite showed the real broker's 2-4 "
        "(SocketServer.close_channel now keeps such requests readable until a response must be written). "
        "The counts differ a little: a real closed connection gives one or two, as the peer's reset arrives "
        "sooner or later; kafkasim's one."),
    "follower_partitioned_from_leader": (
        "Follower 2's network to the leader is cut for 32.8 s, not its link to the controller (on the real "
        "cluster every node runs in a network namespace of its own and a router drops their packets without a "
        "word, like a pulled cable). It keeps heartbeating, so it is never fenced; the leader's isr-expiration "
        "task removes it once it has not caught up for replica.lag.time.max.ms (10 s here), and acks=all "
        "produce waits in the purgatory until then. After the heal its reconnection gets through, it catches "
        "up and rejoins the ISR; nothing acknowledged is lost or fails.",
        "The shrink, the purgatory hold, the absence of a fence and of a loss agree. The shrink comes where "
        "the leader's isr-expiration task (every 5 s here) next runs after 10 s without a caught-up fetch, at "
        "a phase set by when the broker's process started (10.1-13.7 s after the cut in five real runs). "
        "kafkasim's task ran at multiples of 5 s from time 0 whatever the seed until this comparison; it now "
        "draws each broker's start from the seed. The rejoin: the fetch in flight at the cut times out after "
        "the request timeout (30 s) and the follower connects again across the cut, its kernel retransmitting "
        "the SYN 1, 2, 3, 4, 5 and 7 s after the connect (tcp_syn_linear_timeouts 4, Linux 6.5+; kafkasim "
        "doubled from the first, 1, 3, 7 s, as older kernels do, until this comparison showed the real "
        "follower rejoining up to a second sooner). What was sent into the cut is retransmitted by TCP on both "
        "engines (kafkasim's connections model it: kafkasim.network.tcp), but the cut outlasts the "
        "request timeout, so the connection it was sent on is closed first."),
    "delayed_follower_link": (
        "A link_delay of 100 ms each way on follower 1's replication traffic (on the real cluster its replica "
        "fetcher reaches the leader through a Toxiproxy proxy, and a latency toxic is added and removed at the "
        "fault's times). RF 2 at acks=all: the produce completes when the follower's next fetch reports the "
        "new log end offset, so each produce waits two delayed trips, 200 ms, more in the purgatory.",
        "None in the rule: both add two trips to the purgatory time. The real medians carry a few ms more "
        "before and during the delay (five JVMs sharing two cores); Toxiproxy lets what it holds go at once "
        "when the toxic is removed, where kafkasim keeps the delay of a message sent during the window (the "
        "comparison leaves the edges out)."),
    "producer_link_blackhole": (
        "The producer's links to every broker go down for 100 ms (on the real cluster its host's packets are "
        "dropped by the router of the network namespaces, without a word). TCP retransmits what the outage "
        "lost once the retransmission timeout (at least 200 ms) is over, on the same connection: the requests "
        "in flight are answered late, not lost, so nothing is retried and nothing written twice although the "
        "producer is not idempotent.",
        "None in the rule: one retransmission timeout on both, no retry, no duplicate. The real worst latency "
        "carries more (five JVMs on two shared cores; a hand run on a quiet machine measured 207 ms). kafkasim "
        "lost such messages for good until TCP was modelled under its links (kafkasim.network.tcp): every "
        "short outage then cost request.timeout.ms (30 s) and, without idempotence, duplicates."),
    "idempotence_and_a_lost_response": (
        "Each of two acks=all producers has its connections closed while produce requests are in flight (on "
        "the real cluster its own Toxiproxy proxies close every connection through them, both sides). The "
        "requests in flight fail with a network error and are retried on a new connection; the broker had "
        "appended what it had read and drops the responses. The idempotent producer's retries are recognised "
        "by their sequence numbers; the other producer's are appended again.",
        "None in the rule: no duplicate from the idempotent producer, some from the other, every retry "
        "succeeding, on both. The counts differ with what was in flight at the instant of the reset (a real "
        "request takes longer on five JVMs sharing two cores, so more of them are in flight); Toxiproxy closes "
        "with a FIN where a peer's kernel would send an RST, which Kafka's clients and brokers handle alike."),
}


def run_suite(spool: Path) -> int:
    """The differential suite with its agreement rows spooled to ``spool``; its exit code."""
    env = dict(os.environ, **{SPOOL_ENV: str(spool), "KAFKASIM_REAL_KAFKA_REQUIRED": "1"})
    command = [sys.executable, "-m", "pytest", "tests/real/test_differential.py", "-p", "no:cacheprovider", "-q",
               "-n", "2"]
    print("running:", " ".join(command[2:]), "(about 8 minutes)", flush=True)
    return subprocess.call(command, cwd=ROOT, env=env)


def read_spool(path: Path) -> list[Agreement]:
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(Agreement(**json.loads(line)))
            except (ValueError, TypeError) as e:
                raise ValueError(f"{path}:{number}: not an agreement row ({e})") from None
    return rows


def render(rows: list[Agreement], scenarios: dict[str, tuple[Path, list[str]]], *, when: str, machine: str) -> str:
    missing = sorted(set(scenarios) - set(EXPLAINED))
    if missing:
        raise ValueError(f"docs/make_validation.py: no words in EXPLAINED for {', '.join(missing)}")
    verdicts = Counter(r.verdict for r in rows)
    out = [
        "<!-- Generated by docs/make_validation.py from a run of the differential suite: do not edit by hand. -->",
        "# Validation: kafkasim against Apache Kafka",
        "",
        f"The differential suite (`tests/real/test_differential.py`, run by `.ci/run`) runs each scenario below "
        f"on kafkasim and on a real Apache Kafka {KAFKA_VERSION} KRaft cluster on this machine (one controller "
        f"and the scenario's brokers on 127.0.0.1, or each in a network namespace of its own for a network "
        f"partition; Kafka's own Java clients driven open-loop from the scenario's seeded arrival "
        f"times; README, \"Running a scenario on a real Kafka cluster\"). It asserts agreement on what Kafka's "
        f"timers and protocol rules decide, each comparison with the tolerance it needs and why (in the test), "
        f"and reports absolute latencies side by side without asserting them.",
        "",
        f"These rows: {when}, {machine}. Of {len(rows)} comparisons, {verdicts.get('agree', 0)} agree, "
        f"{verdicts.get('DISAGREE', 0)} disagree and {verdicts.get('-', 0)} are reported only. A disagreement "
        f"is either a known rule gap (named below, an expected failure in the suite) or a run on a machine "
        f"too loaded to time a cycle (the suite then says so and does not count it).",
        "",
        "Regenerate: `uv run python docs/make_validation.py` (runs the suite, ~8 minutes).",
        "",
    ]
    for key, (path, overrides) in scenarios.items():
        shows, differs = EXPLAINED[key]
        mine = [r for r in rows if r.scenario == key]
        source = path.relative_to(ROOT).as_posix()
        out += [f"## {key}", "",
                f"`{source}`" + (f", with `{'`, `'.join(overrides)}`" if overrides else "") + ".", "",
                f"**What it shows.** {shows}", "",
                f"**What differs, and why.** {differs}", ""]
        if mine:
            out += [f"| what | kafkasim | Kafka {KAFKA_VERSION} | tolerance | verdict |", "|---|---|---|---|---|"]
            out += [f"| {r.what} | {r.kafkasim} | {r.kafka} | {r.tolerance} | {r.verdict} |" for r in mine]
        else:
            out += ["No rows from this run (its tests did not run)."]
        out.append("")
    calibration = ROOT / JSON_FILE
    if calibration.is_file():  # docs/make_calibration.py's section, kept as it last wrote it
        kept = json.loads(calibration.read_text(encoding="utf-8"))
        out += [section(kept), "", check_section(kept), ""]
    figures = ROOT / published.JSON_FILE
    if figures.is_file():  # docs/make_published.py's section, kept as it last wrote it
        out += [published.section(json.loads(figures.read_text(encoding="utf-8"))), ""]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spool", type=Path, help="agreement rows (JSON lines) of an earlier run of the suite")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    from tests.real.test_differential import SCENARIOS

    if args.spool is None:
        fd, name = tempfile.mkstemp(prefix="kafkasim-validation-", suffix=".jsonl")
        os.close(fd)
        spool = Path(name)
        try:
            code = run_suite(spool)
            rows = read_spool(spool)
        finally:
            spool.unlink(missing_ok=True)
        if code not in (0, 1) or not rows:
            print(f"the differential suite ended with exit code {code} and {len(rows)} rows: "
                  f"{args.out} left as it was", file=sys.stderr)
            return 2
        when = f"a run of {date.today().isoformat()}"
    else:
        if not args.spool.is_file():
            print(f"{args.spool}: no such file", file=sys.stderr)
            return 2
        try:
            rows = read_spool(args.spool)
        except ValueError as e:
            print(e, file=sys.stderr)
            return 2
        when = f"the rows of {args.spool.name}"
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    machine = f"commit {commit or 'unknown'}, {os.cpu_count()} CPUs ({platform.machine()})"
    args.out.write_text(render(rows, SCENARIOS, when=when, machine=machine), encoding="utf-8")
    print(f"wrote {args.out} ({len(rows)} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
