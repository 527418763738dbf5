"""kafkasim.real.machine_cpu: the machine's CPU over a real run's load, split into the run's, other work's, steal
and idle."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafkasim.real.machine_cpu import (
    NOTABLE_SHARE,
    CpuSample,
    cpu_sample,
    cpu_shares,
    describe,
    shared_machine,
)
from kafkasim.real.processes import stop_process

pytestmark = pytest.mark.skipif(not Path("/proc/stat").is_file(), reason="reads Linux's /proc")



def _busy_child(busy_s: float, then_sleep_s: float = 0.0) -> subprocess.Popen[bytes]:
    code = (f"import time\nend = time.process_time() + {busy_s}\nwhile time.process_time() < end: pass\n"
            f"time.sleep({then_sleep_s})\n")
    return subprocess.Popen([sys.executable, "-c", code], start_new_session=True)


def test_the_shares_split_the_machine_between_the_run_other_work_and_idle_with_the_steal_in_the_first_two() -> None:
    from kafkasim.real import machine_cpu

    ticks = machine_cpu._TICKS_PER_S
    before = CpuSample(busy=1000, idle=5000, steal=10, own_s=2.0)
    # 400 ticks over the interval: 200 busy, 50 stolen, 150 idle; the run's processes were given 100 ticks.
    after = CpuSample(busy=1200, idle=5150, steal=60, own_s=2.0 + 100 / ticks)
    shares = cpu_shares(before, after)
    assert shares == {"run": 0.25, "other": 0.375, "idle": 0.375, "steal": 0.125}


def test_the_runs_share_is_never_above_what_the_machine_was_busy_with() -> None:
    before = CpuSample(busy=0, idle=0, steal=0, own_s=0.0)
    after = CpuSample(busy=10, idle=90, steal=0, own_s=1000.0)  # counted at a slightly later instant
    shares = cpu_shares(before, after)
    assert shares is not None and shares["run"] == 0.1 and shares["other"] == 0.0


def test_no_shares_without_two_samples_or_without_time_between_them() -> None:
    sample = CpuSample(busy=1, idle=1, steal=0, own_s=0.0)
    assert cpu_shares(None, sample) is None
    assert cpu_shares(sample, None) is None
    assert cpu_shares(sample, sample) is None


def test_a_live_childs_cpu_counts_as_the_runs_own() -> None:
    child = _busy_child(0.4, then_sleep_s=30.0)
    try:
        before = cpu_sample([child.pid])
        assert before is not None
        time.sleep(1.0)  # it burns 0.4 s of CPU, then sleeps: still alive at the second sample
        assert child.poll() is None
        after = cpu_sample([child.pid])
        assert after is not None
        assert after.own_s - before.own_s >= 0.3
        shares = cpu_shares(before, after)
        assert shares is not None and shares["run"] > 0
        assert shares["run"] + shares["other"] + shares["idle"] == pytest.approx(1.0, abs=1e-3)
    finally:
        stop_process(child.pid, child, 5.0, kill_first=True)


def test_a_child_that_exited_and_was_waited_for_between_the_samples_still_counts() -> None:
    """A crashed broker's CPU before its crash is the run's: once waited for, os.times has it."""
    child = _busy_child(0.4)
    before = cpu_sample([child.pid])
    assert before is not None
    child.wait(timeout=30)
    after = cpu_sample([child.pid])
    assert after is not None and after.own_s - before.own_s >= 0.3


def test_a_busy_machine_is_said_to_weigh_on_the_latencies() -> None:
    quiet = describe({"run": 0.7, "other": 0.05, "idle": 0.25, "steal": 0.01}, 2)
    assert quiet == ("the machine's 2 cores during the load: 70% this run, 5% other work, 25% idle; the "
                     "hypervisor took 1% of them (steal)")
    # As printed: 9.83% of steal reads 10%, and is said to weigh.
    busy = describe({"run": 0.6, "other": 0.0, "idle": 0.4, "steal": NOTABLE_SHARE - 0.0017}, 2)
    assert busy.startswith("the machine's 2 cores during the load: 60% this run, 0% other work, 40% idle; the "
                           "hypervisor took 10% of them (steal); the latencies carry")


def test_a_run_that_shared_its_machine_is_named_and_a_quiet_one_or_one_without_figures_is_not() -> None:
    assert shared_machine({"run": 0.5, "other": 0.06, "idle": 0.44, "steal": 0.04}) == (
        "other work took 6% of the machine's cores during the load and the hypervisor 4% (steal)")
    assert shared_machine({"run": 0.5, "other": 0.05, "idle": 0.45, "steal": 0.04}) is None
    assert shared_machine(None) is None
    assert shared_machine({"run": 0.5}) is None
