"""The calibration's quiet real runs (kafkasim.calibrate.quiet_runs): a run whose machine went to other work is set
aside, kept, and made again; the quietest is kept when none was quiet."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafkasim.calibrate.quiet_runs import SetAside, quiet_run, set_aside_in


class FakeRun:
    """A real run's result as the calibration keeps it: its run-info.json and nothing else."""

    def __init__(self, other: float | None, steal: float = 0.0) -> None:
        cpu = None if other is None else {"run": 0.5, "other": other, "idle": 0.5 - other, "steal": steal}
        self.run_info: dict[str, object] = {"machine_cpu": cpu}

    def save(self, directory: str | Path) -> Path:
        path = Path(directory)
        path.mkdir(parents=True)
        (path / "run-info.json").write_text(json.dumps(self.run_info))
        return path


def runs(*shares: tuple[float | None, float]):
    made = iter([FakeRun(other, steal) for other, steal in shares])
    return lambda: next(made)


def test_a_quiet_run_is_kept_at_once(tmp_path: Path) -> None:
    said: list[str] = []
    kept, aside = quiet_run(runs((0.02, 0.03)), tmp_path / "base-1", say=said.append)
    assert aside == [] and said == [] and (tmp_path / "base-1" / "run-info.json").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["base-1"]


def test_a_run_without_the_machines_figures_is_kept(tmp_path: Path) -> None:
    kept, aside = quiet_run(runs((None, 0.0)), tmp_path / "base-1", say=print)
    assert aside == [] and (tmp_path / "base-1").is_dir()


def test_a_loaded_run_is_set_aside_and_made_again(tmp_path: Path) -> None:
    said: list[str] = []
    # Other work and steal together decide: 3% + 4% is above 5%.
    kept, aside = quiet_run(runs((0.03, 0.04), (0.30, 0.37), (0.01, 0.0)), tmp_path / "base-1", say=said.append)
    assert kept.run_info["machine_cpu"]["other"] == 0.01
    assert aside == [SetAside("base-1.loaded-1", pytest.approx(0.07)), SetAside("base-1.loaded-2", pytest.approx(0.67))]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["base-1", "base-1.loaded-1", "base-1.loaded-2"]
    assert "took 7% of the machine's cores" in said[0] and "set aside as base-1.loaded-1, making it again" in said[0]
    # A calibration that reuses its runs finds them again.
    assert set_aside_in(tmp_path / "base-1") == aside


def test_when_none_is_quiet_the_quietest_is_kept(tmp_path: Path) -> None:
    said: list[str] = []
    kept, aside = quiet_run(runs((0.2, 0.0), (0.08, 0.0), (0.5, 0.0)), tmp_path / "base-1", say=said.append,
                            attempts=3)
    assert kept.run_info["machine_cpu"]["other"] == 0.08
    assert json.loads((tmp_path / "base-1" / "run-info.json").read_text())["machine_cpu"]["other"] == 0.08
    assert [a.name for a in aside] == ["base-1.loaded-1", "base-1.loaded-3"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["base-1", "base-1.loaded-1", "base-1.loaded-3"]
    assert "the quietest of the 3 kept" in said[-1]
    assert set_aside_in(tmp_path / "base-1") == aside


def test_the_quietest_takes_the_place_of_an_empty_directory(tmp_path: Path) -> None:
    (tmp_path / "base-1").mkdir()
    quiet_run(runs((0.2, 0.0), (0.3, 0.0)), tmp_path / "base-1", say=print, attempts=2)
    assert (tmp_path / "base-1" / "run-info.json").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["base-1", "base-1.loaded-2"]


def test_the_most_allowed_is_the_callers(tmp_path: Path) -> None:
    kept, aside = quiet_run(runs((0.3, 0.3)), tmp_path / "base-1", say=print, most=1.0)
    assert aside == []
    with pytest.raises(ValueError, match="attempts: 0"):
        quiet_run(runs(), tmp_path / "x", say=print, attempts=0)
