"""Java detection: version parsing, one-line messages with an install hint, exit code 2 before any Spark."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from rich.console import Console

from kafkasim.console.sweep import sweep_command
from kafkasim.sweep.java import JavaNotFoundError, check_java, parse_java_major


@pytest.mark.parametrize(
    ("version", "major"), [("1.8.0_292", 8), ("11.0.2", 11), ("17", 17), ("17.0.15", 17), ("21-ea", 21)]
)
def test_parse_java_major(version: str, major: int) -> None:
    assert parse_java_major(version) == major


def _fake_java_home(tmp_path: Path, version: str) -> Path:
    home = tmp_path / f"jdk-{version}"
    (home / "bin").mkdir(parents=True)
    java = home / "bin" / "java"
    java.write_text(f'#!/bin/sh\necho \'openjdk version "{version}" 2024-01-16\' >&2\n')
    java.chmod(java.stat().st_mode | stat.S_IEXEC)
    return home


def test_java_17_from_java_home_is_accepted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_HOME", str(_fake_java_home(tmp_path, "17.0.9")))
    info = check_java()
    assert (info.major, info.version) == (17, "17.0.9")


def test_old_java_is_one_line_with_install_hint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_HOME", str(_fake_java_home(tmp_path, "11.0.21")))
    with pytest.raises(JavaNotFoundError) as info:
        check_java()
    message = str(info.value)
    assert "\n" not in message
    assert "found Java 11" in message
    assert "apt-get install openjdk-17-jre-headless" in message


def test_missing_java_fails_the_sweep_command_with_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sweep_dir: Path
) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-such-jdk"))
    sweep = sweep_dir / "sweep.yaml"
    sweep.write_text("base: base.yaml\ngrid:\n  broker.num.io.threads: [1, 2]\nseeds: [1]\n")
    out, err = Console(record=True, width=200), Console(record=True, width=200)
    assert sweep_command(sweep, console=out, err_console=err) == 2
    text = err.export_text()
    assert "needs Java 17+" in text and "no-such-jdk has no bin/java" in text
    assert "openjdk-17-jre-headless" in text
    assert not (sweep_dir / "sweep.out").exists()  # nothing started, nothing written


def test_bad_sweep_file_is_exit_2_without_java(sweep_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The sweep file is checked before Java: a typo is reported even on a machine without Java.
    monkeypatch.setenv("JAVA_HOME", "/nonexistent")
    sweep = sweep_dir / "sweep.yaml"
    sweep.write_text("base: base.yaml\ngrid:\n  broker.num.io.thread: [1, 2]\nseeds: [1]\n")
    err = Console(record=True, width=300)
    assert sweep_command(sweep, console=Console(record=True), err_console=err) == 2
    text = err.export_text()
    assert "invalid sweep" in text and "grid.broker.num.io.thread" in text and "Java" not in text


def test_missing_pyspark_fails_the_sweep_command_with_exit_2_and_the_extra_to_install(
    monkeypatch: pytest.MonkeyPatch, sweep_dir: Path
) -> None:
    import importlib.util

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "pyspark" else real_find_spec(name, *a)
    )
    sweep = sweep_dir / "sweep.yaml"
    sweep.write_text("base: base.yaml\ngrid:\n  broker.num.io.threads: [1, 2]\nseeds: [1]\n")
    err = Console(record=True, width=300)
    assert sweep_command(sweep, console=Console(record=True), err_console=err) == 2
    text = err.export_text()
    assert "needs PySpark" in text and "uv run --extra spark kafkasim sweep" in text
    assert len(text.strip().splitlines()) == 1 and "Traceback" not in text
    assert not (sweep_dir / "sweep.out").exists()
