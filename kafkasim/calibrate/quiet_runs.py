"""The real runs a calibration keeps: runs the machine gave to the cluster, made again when other work and the
hypervisor's steal took more than a few per cent of its cores.

kafkasim models the cluster's own JVMs sharing the machine's cores (a woken thread's wait, preemption, the
collectors), not another tenant's work. A real run measures both, and the other tenants' share moves its tails
more than anything a calibration fits: in 62 real runs of the calibration's four configurations on the
project's machine (2026-12-03, Apache Kafka 4.3.1), the base configuration's end-to-end p99 was 15.6-20.6 ms
in its 11 runs where other work and steal took at most 5% of the cores, 18.1-30.2 ms in its 6 runs at 5-17%,
and 41.8-97.8 ms in its 5 runs at 26-67% (kafkasim.real.machine_cpu; docs/calibration.md, "Quiet runs"). A fit
to the median of such runs learns the neighbours of the afternoon it ran in, and a held-out verdict on three
runs compares the prediction with them.

So a run whose other work and steal took more than ``MAX_FOREIGN`` of the cores is set aside (kept, renamed
``<name>.loaded-<attempt>``: nothing a run produced is lost) and made again, up to ``ATTEMPTS`` times in all;
when none of them was quiet enough, the quietest is kept and the calibration says so.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from kafkasim.real.machine_cpu import foreign_share
from kafkasim.record.result import RUN_INFO_FILE, read_run_info

MAX_FOREIGN = 0.05
"""The most of the machine's cores that other work and the hypervisor's steal may take over a kept run's load."""

ATTEMPTS = 3
"""Runs made of one configuration at most, the first included, before the quietest of them is kept."""


class RealRun(Protocol):
    @property
    def run_info(self) -> dict[str, object]: ...

    def save(self, directory: str | Path) -> Path: ...


@dataclass(frozen=True)
class SetAside:
    """A run made again: where it was kept and the share of the cores other work and steal took."""

    name: str
    foreign: float

    def as_json(self) -> dict[str, str | float]:
        return {"run": self.name, "foreign": round(self.foreign, 4)}


def share_of(result: RealRun) -> float | None:
    return foreign_share(result.run_info.get("machine_cpu"))


def set_aside_name(out: Path, attempt: int) -> Path:
    return out.with_name(f"{out.name}.loaded-{attempt}")


def set_aside_in(out: Path) -> list[SetAside]:
    """The runs of `out` set aside by an earlier call of `quiet_run` (a calibration reusing its runs), in the order
    they were made: each one's share from its run-info.json alone (its tables are not needed)."""
    found = []
    for aside in out.parent.glob(f"{out.name}.loaded-*"):
        attempt = aside.name.rsplit("-", 1)[1]
        if aside.is_dir() and attempt.isdigit():
            share = foreign_share(read_run_info(aside / RUN_INFO_FILE).get("machine_cpu"))
            found.append((int(attempt), SetAside(aside.name, share or 0.0)))
    return [a for _n, a in sorted(found, key=lambda f: f[0])]


def quiet_run(make: Callable[[], RealRun], out: Path, *, say: Callable[[str], None],
              most: float = MAX_FOREIGN, attempts: int = ATTEMPTS) -> tuple[RealRun, list[SetAside]]:
    """Make a run (`make`) and keep it in `out` when other work and steal took at most `most` of the machine's
    cores over its load (or the run does not say: a machine without /proc/stat); otherwise keep it aside and make
    it again, up to `attempts` runs in all, and keep the quietest. Returns the kept run and those set aside."""
    if attempts < 1:
        raise ValueError(f"attempts: {attempts} (allowed: 1 or more)")
    aside: list[tuple[float, Path, RealRun]] = []
    for attempt in range(1, attempts + 1):
        result = make()
        share = share_of(result)
        if share is None or share <= most:
            result.save(out)
            return result, [SetAside(path.name, s) for s, path, _r in aside]
        path = set_aside_name(out, attempt)
        result.save(path)
        aside.append((share, path, result))
        again = "making it again" if attempt < attempts else f"the quietest of the {attempts} kept"
        say(f"other work and the hypervisor's steal took {share:.0%} of the machine's cores (a kept run: at most "
            f"{most:.0%}): set aside as {path.name}, {again}")
    share, path, result = min(aside, key=lambda a: a[0])
    if out.is_dir() and not any(out.iterdir()):
        out.rmdir()  # as RunResult.save replaces an empty directory; a move would go inside it
    shutil.move(path, out)
    return result, [SetAside(p.name, s) for s, p, _r in aside if p != path]
