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
