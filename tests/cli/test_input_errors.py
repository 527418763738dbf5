"""Bad input gets exit code 2 and a short message naming where the problem is; validate and schema.

The cases the issue names run as subprocesses (what a user sees, tracebacks included); the rest go through
the same entry point in process, to keep the test set fast.
"""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from kafkasim.console.run_command import resolve_clock
from kafkasim.scenario import load_scenario, with_overrides

from .support import (
    QUICKSTART,
    SCHEMA_FILE,
    SHIPPED_SCENARIOS,
    SHORT,
    assert_no_traceback,
    call,
    cli_env,
    kafkasim,
)

BAD_SCENARIO = """\
name: bad
description: a scenario with two mistakes
duration: 2s
topics:
  - name: orders
    partitions: 1
producers:
  - name: p
    topic: orders
    acks: most
    rate: 10/s
    linger.msx: 3
"""


@pytest.fixture()
def bad_file(tmp_path: Path) -> Path:
    path = tmp_path / "bad.yaml"
    path.write_text(BAD_SCENARIO)
    return path


def test_a_bad_scenario_file_names_file_line_and_key(bad_file: Path) -> None:
    result = kafkasim("run", bad_file, cwd=bad_file.parent)
    assert result.returncode == 2
    assert_no_traceback(result)
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert lines[0] == "kafkasim: error: 2 problems in the scenario:"
    assert lines[1].strip().startswith(f"{bad_file}:10: producers[0].acks: ")
    assert lines[2].strip() == f"{bad_file}:12: producers[0].linger.msx: unknown key 'linger.msx', did you mean 'linger.ms'?"
    assert not (bad_file.parent / "runs").exists()


def test_set_with_an_unknown_key_suggests_the_right_one(tmp_path: Path) -> None:
    result = kafkasim("run", QUICKSTART, "--set", "producers[0].linger.mss=0", cwd=tmp_path)
    assert result.returncode == 2
    assert_no_traceback(result)
    assert result.stderr.strip().splitlines() == [
        "kafkasim: error: --set producers[0].linger.mss=0: producers[0].linger.mss: unknown key 'linger.mss', "
        "did you mean 'linger.ms'?"
    ]
    assert not (tmp_path / "runs").exists()


def test_validate_accepts_every_shipped_scenario() -> None:
    assert SHIPPED_SCENARIOS
    result = kafkasim("validate", *SHIPPED_SCENARIOS)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == [f"ok {path}" for path in SHIPPED_SCENARIOS]


def test_schema_on_stdout_is_byte_identical_to_the_schema_file() -> None:
    import subprocess
    import sys

    from .support import cli_env

    result = subprocess.run([sys.executable, "-m", "kafkasim", "schema"], capture_output=True, env=cli_env(), timeout=60)
    assert result.returncode == 0
    assert result.stdout == SCHEMA_FILE.read_bytes()


# --- in process ----------------------------------------------------------------------------------------


def test_schema_out_file_is_byte_identical(tmp_path: Path) -> None:
    target = tmp_path / "schema.json"
    target.write_text("old")
    assert call("schema", "--out", target) == 0
    assert target.read_bytes() == SCHEMA_FILE.read_bytes()
    assert [p.name for p in tmp_path.iterdir()] == ["schema.json"]


def test_schema_out_refuses_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert call("schema", "--out", tmp_path) == 2
    assert "is a directory" in capsys.readouterr().err


def test_validate_reports_every_bad_file_and_exits_2(bad_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert call("validate", QUICKSTART, bad_file, bad_file.parent / "missing.yaml") == 2
    captured = capsys.readouterr()
    assert captured.out.startswith(f"ok {QUICKSTART}: quickstart, 30 s")
    assert f"{bad_file}:12: producers[0].linger.msx" in captured.err
    assert f"{bad_file.parent / 'missing.yaml'}: no such scenario file" in captured.err
    assert captured.err.strip().endswith("2 of 3 scenario file(s) invalid")


def test_a_missing_scenario_file_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert call("run", tmp_path / "nope.yaml") == 2
    assert capsys.readouterr().err == f"kafkasim: error: {tmp_path / 'nope.yaml'}: no such scenario file\n"


def test_a_non_result_directory_is_refused_before_running(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    keep = tmp_path / "mine"
    keep.mkdir()
    (keep / "notes.txt").write_text("precious")
    assert call("run", QUICKSTART, *SHORT, "--out", keep) == 2
    captured = capsys.readouterr()
    assert "is not empty (notes.txt) and is not a kafkasim result" in captured.err
    assert "kafkasim: running" not in captured.err  # refused before spending the run
    assert [p.name for p in keep.iterdir()] == ["notes.txt"]
    a_file = tmp_path / "file"
    a_file.write_text("x")
    assert call("run", QUICKSTART, *SHORT, "--out", a_file) == 2
    assert "exists and is not a directory" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--virtual", "--speed", "2"], "cannot be combined with --virtual"),
        (["--speed", "0"], "--speed must be 0.001 to 1000000 (1 = real time, 0.5 = half speed), got 0"),
        (["--speed", "nan"], "--speed must be 0.001 to 1000000"),
        (["--speed", "1e-9"], "--speed must be 0.001 to 1000000 (1 = real time, 0.5 = half speed), got 1e-09"),
        (["--speed", "inf"], "got inf"),
        (["--speed", "2e6"], "--speed must be 0.001 to 1000000"),
        (["--speed", "fast"], "'--speed'"),
        (["--seed", "1.5"], "'--seed'"),
        (["--seed", "true"], "'--seed'"),
        (["--seed", "9223372036854775808"], "'--seed'"),
        (["--set", "seed=true"], "seed: expected an integer, got true"),
        (["--set", "clock={mode: wallclock, speed: 1e-9}"], "clock.speed: 1e-09 is out of range (allowed: 0.001 to"),
        (["--seed", "-1"], "'--seed'"),
        (["--set", "duration"], "expected key.path=value"),
        (["--set", "producers[3].rate=5/s"], "producers[3]"),
    ],
)
def test_bad_run_options(args: list[str], fragment: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert call("run", QUICKSTART, *args) == 2
    err = capsys.readouterr().err
    assert err.startswith("kafkasim: error: ") and fragment in err, err


def test_kafkasim_alone_shows_the_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert call() == 2
    out = capsys.readouterr()
    assert "Usage:" in out.out + out.err and "wheel" in out.out + out.err and "kafkasim: error" not in out.err, out


def test_an_unknown_verb_is_a_usage_error_with_a_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    assert call("rnu") == 2
    err = capsys.readouterr().err
    assert err.startswith("kafkasim: error: No such command 'rnu'") and "'run'" in err, err


def test_clock_choice() -> None:
    virtual = load_scenario(QUICKSTART)
    paced = with_overrides(virtual, ["clock={mode: wallclock, speed: 4}"])
    assert resolve_clock(virtual, None, None, False) == (False, 1.0)
    assert resolve_clock(virtual, None, None, True) == (True, 1.0)  # --live watches in real time
    assert resolve_clock(virtual, None, 2.0, False) == (True, 2.0)  # --speed implies --wallclock
    assert resolve_clock(virtual, False, None, True) == (False, 1.0)  # --live --virtual: a quick look
    assert resolve_clock(paced, None, None, False) == (True, 4.0)  # the scenario's own clock
    assert resolve_clock(paced, False, None, False) == (False, 4.0)
    assert resolve_clock(paced, True, 0.5, False) == (True, 0.5)


def test_sweep_verb_reaches_the_sweep_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A missing sweep file is found on the driver before Spark or Java are touched: exit 2 and its name.
    assert call("sweep", tmp_path / "missing.yaml") == 2
    captured = capsys.readouterr()
    assert "missing.yaml" in captured.err and "Traceback" not in captured.err


# --- deep nesting: refused before PyYAML's composer recurses (it overflowed the C stack: exit 139) ------

DEEP_FORMS = {
    "flow-seq": lambda n: "name: " + "[" * n + "]" * n + "\n",
    "flow-map": lambda n: "name: " + "{a: " * n + "1" + "}" * n + "\n",
    "block-seq": lambda n: "name:\n  " + "- " * n + "x\n",
    "block-keys": lambda n: "name:\n  " + "? " * n + "x\n",
}


def _deep_files(tmp_path: Path) -> list[Path]:
    files = []
    for form, make in DEEP_FORMS.items():
        for n in (30_000, 100_000):
            path = tmp_path / f"{form}-{n}.yaml"
            path.write_text(make(n))
            files.append(path)
    return files


def test_validate_refuses_files_nested_30000_and_100000_levels_deep(tmp_path: Path) -> None:
    files = _deep_files(tmp_path)
    result = kafkasim("validate", *files, cwd=tmp_path)
    assert result.returncode == 2, (result.returncode, result.stderr[-500:])  # a segfault is -11 or 139
    assert_no_traceback(result)
    for path in files:
        assert re.search(rf"{re.escape(str(path))}:[12]:\d+: invalid YAML: nested too deeply", result.stderr), path
    assert result.stderr.strip().endswith("8 of 8 scenario file(s) invalid")


@pytest.mark.parametrize(("form", "n"), [("flow-seq", 100_000), ("block-seq", 30_000), ("flow-map", 30_000)])
def test_run_refuses_a_file_nested_too_deeply(tmp_path: Path, form: str, n: int) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text(DEEP_FORMS[form](n))
    result = kafkasim("run", path, cwd=tmp_path)
    assert result.returncode == 2, (result.returncode, result.stderr[-500:])
    assert_no_traceback(result)
    assert re.fullmatch(rf"kafkasim: error: {re.escape(str(path))}:[12]:\d+: invalid YAML: nested too deeply "
                        r"\(at most 40 levels\)\n", result.stderr), result.stderr
    assert not (tmp_path / "runs").exists()


def test_a_set_value_nested_30000_levels_deep_is_refused(tmp_path: Path) -> None:
    n = 30_000
    result = kafkasim("run", QUICKSTART, "--set", "name=" + "[" * n + "]" * n, cwd=tmp_path)
    assert result.returncode == 2, (result.returncode, result.stderr[-500:])
    assert_no_traceback(result)
    assert "--set name=[[[" in result.stderr and "nested too deeply (at most 40 levels)" in result.stderr


def test_a_bad_network_partition_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "partition.yaml"
    path.write_text(
        "name: partition\ndescription: a host on both sides\nduration: 10s\n"
        "topics: [{name: t, replication.factor: 2}]\n"
        "faults:\n  - {type: network_partition, at: 1s, sides: [[broker-0, broker-1], [broker-1]]}\n"
    )
    assert call("run", path, "--no-figures", "--out", tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert f"{path}:6: faults[0].sides[1][0]: broker-1 is on both sides" in err
    assert "Traceback" not in err and not (tmp_path / "out").exists()


@pytest.mark.parametrize(("cluster", "target"), [(True, "broker-0"), (False, "follower-2")])
def test_a_fault_target_with_a_trailing_newline_is_bad_input(tmp_path: Path, cluster: bool, target: str) -> None:
    # Both validated (the target patterns ended in `$`, which matches before a final newline), then the run
    # failed with a traceback.
    path = tmp_path / "newline.yaml"
    path.write_text(
        "name: newline\ndescription: a target with a newline\nduration: 2s\n"
        + ("cluster: {brokers: 3}\n" if cluster else "")
        + "topics: [{name: t, replication.factor: 3}]\n"
        + f'faults:\n  - type: crash\n    target: "{target}\\n"\n    at: 1s\n'
    )
    line = 8 if cluster else 7
    for verb in (["validate", path], ["run", path, "--no-figures", "--out", tmp_path / "out"]):
        result = kafkasim(*verb)
        assert result.returncode == 2, result.stderr
        assert_no_traceback(result)
        assert f"{path}:{line}: faults[0].target: unknown target '{target}\\n', did you mean '{target}'?" in result.stderr
    assert not (tmp_path / "out").exists()


def _kafkasim_bounded(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """kafkasim in a subprocess that can neither block the suite (120 s: `sweep` alone imports for seconds on
    a busy machine) nor fill the machine's memory (2 GiB of address space): `validate /dev/zero` read until
    memory ran out, `validate FIFO` blocked forever."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    return subprocess.run([sys.executable, "-m", "kafkasim", *map(str, args)], capture_output=True, text=True,
                          env=cli_env(), timeout=120, preexec_fn=limit)


@pytest.mark.parametrize("verb", ["validate", "run", "sweep"])
def test_anything_but_a_regular_file_is_refused_before_it_is_read(tmp_path: Path, verb: str) -> None:
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    (tmp_path / "dir.yaml").mkdir()
    kinds = {
        "/dev/zero": "a character device",
        "/dev/urandom": "a character device",
        str(fifo): "a named pipe (FIFO)",
        str(tmp_path / "dir.yaml"): "a directory",
    }
    what = "sweep" if verb == "sweep" else "scenario"
    if verb == "sweep":  # the slowest verb to start: the two kinds that read forever or block
        kinds = {path: kind for path, kind in kinds.items() if path in ("/dev/zero", str(fifo))}
    for path, kind in kinds.items():
        try:
            result = _kafkasim_bounded(verb, path)
        except subprocess.TimeoutExpired:
            pytest.fail(f"kafkasim {verb} {path} did not return")
        assert result.returncode == 2, (path, result.returncode, result.stderr[-300:])
        assert_no_traceback(result)
        assert f"{path}: is {kind}, not a regular file (allowed: a {what} YAML file)" in result.stderr, result.stderr


def test_a_scenario_file_larger_than_the_limit_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "big.yaml"
    path.write_bytes(QUICKSTART.read_bytes() + b"#" * (4 << 20))
    for verb in ("validate", "run"):
        assert call(verb, path) == 2
        assert f"{path}: is larger than 4 MiB (allowed: a scenario file of at most 4 MiB;" in capsys.readouterr().err
