"""The address-space guard that ends a run as out of memory before glibc's malloc starts crawling at the
edge of RLIMIT_AS (see kafkasim/run/memory_guard.py; tests/cli/test_out_of_memory.py runs it for real)."""

from __future__ import annotations

import sys

import pytest

from kafkasim.run.memory_guard import AddressSpaceGuard

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/self/statm")


def test_exhausted_once_less_than_the_margin_is_left() -> None:
    probe = AddressSpaceGuard(1 << 62)
    mapped = probe.mapped_bytes()
    assert mapped > 0
    assert not AddressSpaceGuard(mapped + 100 * 1024 * 1024, margin_bytes=10 * 1024 * 1024).exhausted()
    assert AddressSpaceGuard(mapped + 5 * 1024 * 1024, margin_bytes=10 * 1024 * 1024).exhausted()


def test_no_guard_without_a_limit() -> None:
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    guard = AddressSpaceGuard.from_process_limit()
    assert (guard is None) == (soft == resource.RLIM_INFINITY)


def test_before_spool_needs_room_for_a_spool_write_on_top_of_the_margin() -> None:
    from kafkasim.run.memory_guard import SPOOL_WRITE_BYTES

    mapped = AddressSpaceGuard(1 << 62).mapped_bytes()
    margin = 10 * 1024 * 1024
    roomy = AddressSpaceGuard(mapped + margin + SPOOL_WRITE_BYTES + 64 * 1024 * 1024, margin_bytes=margin)
    roomy.before_spool()  # no exception
    tight = AddressSpaceGuard(mapped + margin + SPOOL_WRITE_BYTES // 2, margin_bytes=margin)
    assert not tight.exhausted()  # the loop would go on...
    with pytest.raises(MemoryError, match="spool write"):
        tight.before_spool()  # ...but not into a Parquet write that may not fit


# A child process: the CLI's allocator choice, then two spool writes of 50 000 rows each; prints how much
# address space they mapped. Before the fix (Arrow's mimalloc, threaded conversion) this was ~1170 MB, which
# an address-space-limited run does not have: Arrow's C++ then ended the process with std::bad_alloc (seen in
# CI as `kafkasim run` killed by SIGABRT in tests/cli/test_out_of_memory.py).
_SPOOL_CHILD = """
import os, sys
from kafkasim.record.arrow_allocator import prefer_system_allocator
prefer_system_allocator()
sys.path.insert(0, {tests!r})
from record.rows import Row
from kafkasim.record.recorder import Recorder
page = os.sysconf("SC_PAGE_SIZE")
def mapped(): return int(open("/proc/self/statm").read().split()[0]) * page
rec = Recorder(["c"], max_rows_in_memory=50_000)
rows = [Row(i, "Produce", "p", 1, 100, acks=-1, intended_ms=1.0, client_send_ms=2.0) for i in range(100_000)]
before = mapped()
for row in rows:
    rec.finish_request(row)
assert rec.spooled_rows == {{"requests": 100_000}}, rec.spooled_rows
print(mapped() - before)
assert len(rec.tables().requests) == 100_000
"""


def test_spool_writes_map_little_address_space() -> None:
    import subprocess
    from pathlib import Path

    tests = str(Path(__file__).resolve().parents[1])
    env = {k: v for k, v in __import__("os").environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    done = subprocess.run([sys.executable, "-c", _SPOOL_CHILD.format(tests=tests)], capture_output=True,
                          text=True, env=env, timeout=120, check=True)
    grown = int(done.stdout.split()[-1])
    assert grown < 48 * 1024 * 1024, f"two spool writes mapped {grown / 2**20:.0f} MB of address space"
