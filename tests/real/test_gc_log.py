"""kafkasim.real.gc_log: a real run's JVMs log their collector's pauses, and kafkasim reads them."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kafkasim.real import gc_log
from kafkasim.real.kafka_libs import KafkaLibs

LOG = """\
[1796295567122ms] Using Serial
[1796295567974ms] GC(0) Pause Young (Allocation Failure) 8M->2M(30M) 12.192ms
[1796295568105ms] GC(1) Pause Young (Allocation Failure) 11M->3M(30M) 8.065ms
[1796295568108ms] GC(2) Pause Young (Allocation Failure) 12M->3M(30M) 1.975ms
[1796295568161ms] GC(95) Pause Full (System.gc()) 6M->3M(30M) 8.281ms
"""


def test_the_pauses_are_read_in_the_runs_time_and_summed_over_a_window() -> None:
    t0 = 1796295567000.0
    found = gc_log.pauses(LOG.splitlines(), t0)
    assert [(p.at_ms, p.ms, p.kind) for p in found] == [
        (974.0, 12.192, "Pause Young"), (1105.0, 8.065, "Pause Young"), (1108.0, 1.975, "Pause Young"),
        (1161.0, 8.281, "Pause Full")]
    # Only the pauses that ended in the window: the first one is before it.
    s = gc_log.summary(found, 1000.0, 2000.0)
    assert s == {"count": 3, "per_second": 3.0, "total_ms": 18.321, "share_of_time": 0.01832, "p50_ms": 8.065,
                 "max_ms": 8.281}
    assert gc_log.summary(found, 5000.0, 6000.0) == {"count": 0, "per_second": 0.0, "total_ms": 0.0,
                                                      "share_of_time": 0.0, "p50_ms": None, "max_ms": None}


def test_a_jvm_started_with_the_flag_writes_a_log_the_reader_reads(kafka_libs: KafkaLibs, tmp_path: Path) -> None:
    # The JVM's own format, not a copy of it: a program that allocates, then asks for a full collection.
    source = tmp_path / "Allocate.java"
    source.write_text("public class Allocate { public static void main(String[] a) { byte[] k = null;"
                      " for (int i = 0; i < 100000; i++) k = new byte[4096]; System.gc();"
                      " System.out.println(k.length); } }\n")
    done = subprocess.run([kafka_libs.java, "-Xmx32m", "-XX:+UseSerialGC", gc_log.gc_flag(tmp_path), str(source)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    logs = gc_log.gc_logs(tmp_path)
    assert len(logs) == 1 and logs[0].name.startswith("gc-") and logs[0].suffix == ".log"
    found = gc_log.pauses(logs[0].read_text().splitlines(), 0.0)
    kinds = {p.kind for p in found}
    assert "Pause Young" in kinds and "Pause Full" in kinds, logs[0].read_text()
    assert all(p.ms > 0 and p.at_ms > 1e12 for p in found)  # epoch milliseconds, as a run's time 0 is


@pytest.mark.parametrize("line", ["[12ms] GC(1) Pause Young (Allocation Failure) 8M->2M(30M)",
                                  "GC(1) Pause Young (Allocation Failure) 8M->2M(30M) 1.0ms",
                                  "[12ms] GC(1) Concurrent Mark 1.0ms"])
def test_a_line_that_is_not_a_finished_pause_is_skipped(line: str) -> None:
    assert gc_log.pauses([line], 0.0) == []


def test_the_line_on_the_screen_names_each_jvm_and_says_none_when_it_did_not_collect() -> None:
    gc = {"from_ms": 3000.0, "to_ms": 20000.0, "jvms": {
        "broker-0": {"count": 25, "per_second": 1.47, "total_ms": 326.6, "share_of_time": 0.0192, "p50_ms": 12.849,
                     "max_ms": 20.403},
        "controller": {"count": 0, "per_second": 0.0, "total_ms": 0.0, "share_of_time": 0.0, "p50_ms": None,
                       "max_ms": None}}}
    assert gc_log.describe(gc) == ("the JVMs' garbage collection after the warm-up (kafka/<jvm>/gc-*.log): broker-0 "
                                   "25 pauses, 1.9% of its time, median 12.8 ms, longest 20.4 ms; controller none")
    # A result saved before the GC logs were kept.
    assert gc_log.describe(None) is None and gc_log.describe({"jvms": {}}) is None
