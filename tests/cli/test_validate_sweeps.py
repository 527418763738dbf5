"""`kafkasim validate` checks sweep files as well as scenarios: a sweep is recognised by its `base:` key and
checked as `kafkasim sweep` checks it before Spark starts (every variant built and validated), without
Spark or Java."""

from __future__ import annotations

from pathlib import Path

import pytest

from .support import QUICKSTART, REPO, assert_no_traceback, call, kafkasim

SHIPPED_SWEEPS = sorted((REPO / "scenarios" / "sweeps").glob("*.yaml"))

BAD_SWEEP = f"""\
# a sweep with three mistakes
base: {QUICKSTART}
duration: 3s
grid:
  producers[0].acks: [1, most]
  broker.replica.fetch.wait.max.msx: [0, 10]
replications: 0
"""


def test_validate_accepts_the_shipped_sweeps_next_to_a_scenario() -> None:
    assert len(SHIPPED_SWEEPS) == 2
    result = kafkasim("validate", QUICKSTART, *SHIPPED_SWEEPS)
    assert result.returncode == 0, result.stderr
    assert_no_traceback(result)
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"ok {QUICKSTART}: quickstart, 30 s")
    fetch_wait = REPO / "scenarios" / "sweeps" / "fetch_wait_x_acks.yaml"
    assert f"ok {fetch_wait}: sweep of 12 variant(s) x 3 seed(s) = 36 runs on ../quickstart.yaml" in lines


def test_a_bad_sweep_names_file_line_and_key_and_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "bad_sweep.yaml"
    path.write_text(BAD_SWEEP)
    result = kafkasim("validate", path, QUICKSTART, cwd=tmp_path)
    assert result.returncode == 2
    assert_no_traceback(result)
    assert result.stdout.startswith(f"ok {QUICKSTART}")
    assert f"{path}:7: replications: " in result.stderr
    assert result.stderr.strip().endswith("1 of 2 scenario file(s) invalid")
    # With the file-level mistake fixed, each variant is checked against the base scenario.
    path.write_text(BAD_SWEEP.replace("replications: 0", "replications: 2"))
    result = kafkasim("validate", path, cwd=tmp_path)
    assert result.returncode == 2
    assert_no_traceback(result)
    assert f"{path}:5: grid.producers[0].acks: value 'most': " in result.stderr
    assert f"{path}:6: grid.broker.replica.fetch.wait.max.msx: unknown key" in result.stderr


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("base: missing.yaml\ngrid: {duration: [1s]}\nseeds: [1]\n", "missing.yaml"),
        ("base: {name: x}\ngird: {duration: [1s]}\nseeds: [1]\n", ":2: gird: unknown key"),
    ],
)
def test_other_sweep_mistakes_are_messages(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str,
                                           fragment: str) -> None:
    path = tmp_path / "sweep.yaml"
    path.write_text(text)
    assert call("validate", path) == 2
    err = capsys.readouterr().err
    assert fragment in err and "Traceback" not in err
