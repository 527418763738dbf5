"""`kafkasim wheel` end to end, as a user runs it (a subprocess), including its one-line usage errors."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from kafkasim.console.app import main, parse_add, parse_cancel
from kafkasim.timer.walkthrough import ScheduledAdd, ScheduledCancel


def kafkasim(*args: str, columns: int = 200) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": str(columns), "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "kafkasim", *args], capture_output=True, text=True, env=env, timeout=60
    )


def test_wheel_prints_the_cascade_step_by_step() -> None:
    result = kafkasim(
        "wheel", "--wide", "--tick-ms", "1", "--wheel-size", "20", "--add", "450", "--add", "8@2", "--add", "19@2",
        "--add", "350",
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for header in ("time ms", "event", "task", "level", "bucket", "bucket range", "note"):
        assert header in out
    rows = [line for line in out.splitlines() if "│" in line]
    t1 = [" ".join(c.strip() for c in row.split("│")[1:7]).strip() for row in rows if "│ T1 " in row]
    assert t1[-4:] == [
        "0 add T1 L3 1 [400, 800)",
        "400 demote T1 L2 2 [440, 460)",
        "440 demote T1 L1 10 [450, 451)",
        "450 run T1",
    ]
    assert any("bucket due" in row and "[400, 800)" in row and "L1=400 L2=400 L3=400" in row for row in rows)


def test_wheel_defaults_to_kafkas_tick_and_size() -> None:
    result = kafkasim("wheel", "--add", "25")
    assert result.returncode == 0, result.stderr
    assert "tick 1 ms, 20 buckets per level" in result.stdout
    assert "[20, 40)" in result.stdout and "[25, 26)" in result.stdout


def flat(text: str) -> str:
    """The output with every run of whitespace made one space: a wrapped note reads as one line."""
    return " ".join(text.split())


def test_default_view_fits_80_columns_and_no_note_is_cut() -> None:
    result = kafkasim("wheel", columns=80)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, max(lines, key=len)
    assert len(lines) < 80  # 20 steps of one line plus their notes, not 185 lines of 7-character notes
    out = flat(result.stdout)
    for note in (
        "delay 450 → exp 450 fits L3 window [0, 8000); bucket queued for 400",
        "flush 1 entry; wheel clocks L1=400 L2=400 L3=400",
        "from L3: exp 450 fits L2 window [400, 800); bucket queued for 440",
        "exp 450 < L1 time 450 + tick 1 → executor",
    ):
        assert note in out
    # One step per line: time, event, task, level, bucket, range, size, queued.
    assert "400 demote T1 L2 2 [440, 460) 1 1" in [flat(line) for line in lines]


def test_wide_view_keeps_one_line_per_step() -> None:
    result = kafkasim("wheel", "--wide", columns=80)
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if "│" in line]
    assert any("delay 450 → exp 450 fits L3 window [0, 8000); bucket queued for 400" in row for row in rows)
    assert max(len(line) for line in result.stdout.splitlines()) > 80


def step_lines(out: str) -> list[str]:
    """The step lines of the default view, whitespace-normalised (their notes are the indented lines)."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("time ms"))
    return [flat(line) for line in lines[start + 1 :] if not line.startswith(" " * 9)]


def test_cancel_and_complete_leave_the_wheel_at_once_and_the_bucket_waits_empty() -> None:
    result = kafkasim(
        "wheel", "--add", "450", "--add", "30", "--add", "25", "--complete", "T2@5", "--cancel", "1@7", columns=80
    )
    assert result.returncode == 0, result.stderr
    steps = step_lines(result.stdout)
    # time event task level bucket range size queued: T2 and T3 share L2 bucket 1, one delay-queue entry.
    assert steps[:5] == [
        "0 add T1 L3 1 [400, 800) 1 1",
        "0 add T2 L2 1 [20, 40) 2 2",
        "0 add T3 L2 1 [20, 40) 3 2",
        "5 complete T2 L2 1 [20, 40) 2 2",  # size drops at once; the bucket stays queued
        "7 cancel T1 L3 1 [400, 800) 1 2",
    ]
    assert "20 bucket due L2 1 [20, 40) 1 1" in steps  # only T3 is left to flush
    assert steps[-1] == "400 bucket due L3 1 [400, 800) 0 0"  # flushed empty: T1 did not wait for it
    assert not any(step.startswith(("run T1", "run T2")) or " run T1" in step or " run T2" in step for step in steps)
    out = flat(result.stdout)
    assert "DelayedOperation.forceComplete" in out and "TimerTaskEntry.remove" in out
    assert "1 entry left, the bucket stays queued until 20" in out
    assert "T1 │ 0 │ 450 │ 450 │ 7 │ cancelled" in out and "T2 │ 0 │ 30 │ 30 │ 5 │ completed" in out


def test_a_cancel_after_the_task_ran_changes_nothing() -> None:
    result = kafkasim("wheel", "--add", "5", "--cancel", "T1@9", columns=80)
    assert result.returncode == 0, result.stderr
    assert "9 cancel T1 0 0" in step_lines(result.stdout)
    assert "in no bucket (it ran at 5): nothing to remove" in flat(result.stdout)


def test_parse_cancel_accepts_t_prefix_or_a_number() -> None:
    assert parse_cancel("T2@5") == ScheduledCancel(2, 5)
    assert parse_cancel("3@0", completed=True) == ScheduledCancel(3, 0, completed=True)


BAD_ARGUMENTS = [
    (["--add", "abc"], "'abc' is not DELAY or DELAY@AT"),
    (["--add", "-5"], "delay -5 ms is out of range"),
    (["--tick-ms", "0"], "'--tick-ms'"),
    (["--wheel-size", "1"], "at least 2 buckets"),
]


def assert_one_line_error(stderr: str, fragment: str) -> None:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("kafkasim: error: ") and fragment in lines[0]
    assert "Traceback" not in stderr


@pytest.mark.parametrize(("args", "fragment"), BAD_ARGUMENTS)
def test_bad_arguments_get_one_line_and_exit_code_2(args: list[str], fragment: str) -> None:
    result = kafkasim("wheel", *args)
    assert result.returncode == 2
    assert_one_line_error(result.stderr, fragment)
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--add", "5@-1"], "add time -1 ms is out of range"),
        (["--add", "8@"], "'8@' is not DELAY or DELAY@AT"),
        (["--tick-ms", "x"], "'--tick-ms'"),
        (["--no-such-option"], "No such option"),
        (["--cancel", "T2"], "'T2' is not TASK@AT"),
        (["--complete", "T1@-3"], "'T1@-3': time -3 ms is out of range"),
        (["--cancel", "T9@3"], "there is no task T9 to cancel or complete; the adds make T1 to T4"),
        (["--add", "5@10", "--complete", "T1@3"], "T1 is cancelled or completed at 3 ms, before it is added at 10 ms"),
    ],
)
def test_more_bad_arguments_in_process(args: list[str], fragment: str, capsys: pytest.CaptureFixture[str]) -> None:
    # Same entry point as the console script, without paying a Python start-up per case.
    with pytest.raises(SystemExit) as exit_info:
        main(["wheel", *args])
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    assert_one_line_error(captured.err, fragment)
    assert captured.out == ""


def test_parse_add_accepts_delay_and_delay_at_time() -> None:
    assert parse_add("450") == ScheduledAdd(450, 0)
    assert parse_add("8@2") == ScheduledAdd(8, 2)


def test_help_still_works() -> None:
    result = kafkasim("wheel", "--help")
    assert result.returncode == 0
    for option in ("--add", "--wheel-size", "--cancel", "--complete", "--wide"):
        assert option in result.stdout
