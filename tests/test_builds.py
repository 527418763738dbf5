"""The two builds: the compiled core (mypyc, through hatch_build.py) and the pure-Python package.

The suite runs against whichever build is installed (compiled, on a machine with a C compiler). The pure
package must behave identically: ``test_pure_copy_gives_the_same_results`` runs the engine's golden outputs
(``both_builds``) and the tests that can only run interpreted (``pure_only``) in a copy of the checkout
without the extension modules.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import pytest

from kafkasim.compiled import PACKAGE_DIR, compiled_modules, stale_sources
from tests.scripts import load_script

ROOT = Path(__file__).resolve().parent.parent
PURE_REQUESTED = os.environ.get("KAFKASIM_PURE", "") not in ("", "0")
# Random scenarios (benchmarks/random_scenarios.py) whose tables must be the same in both builds: clusters
# and single leaders, crashes, pauses, partitions, link faults, slow disks, every acks setting.
BUILD_SEEDS = (6, 14, 17, 19, 26, 39, 59, 60)
COMPILED_DIGESTS = "KAFKASIM_COMPILED_DIGESTS"  # set by the compiled run for the pure copy's run


def random_scenario_digests() -> dict[str, list[object]]:
    """Row counts and table hashes of each BUILD_SEEDS scenario's run, as the golden test takes them."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import random_scenarios

    from kafkasim.run import run_scenario
    from tests.engine.test_determinism import table_hash

    digests: dict[str, list[object]] = {}
    for seed in BUILD_SEEDS:
        result = run_scenario(random_scenarios.load(seed))
        summary = json.dumps(result.summary, sort_keys=True, default=str).encode()
        digests[str(seed)] = [len(result.requests), len(result.records), table_hash(result.requests),
                              table_hash(result.records), table_hash(result.timeseries),
                              hashlib.sha256(summary).hexdigest()]
    return digests


def configured_modules() -> set[str]:
    """The modules pyproject.toml asks hatch_build.py to compile (a package's __init__ stays interpreted)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    hook = config["tool"]["hatch"]["build"]["targets"]["wheel"]["hooks"]["custom"]

    def modules(patterns: list[str]) -> set[str]:
        found = set()
        for pattern in patterns:
            path = PACKAGE_DIR.parent / pattern
            for file in path.rglob("*.py") if path.is_dir() else [path]:
                if file.name != "__init__.py":
                    found.add(".".join(file.relative_to(PACKAGE_DIR.parent).with_suffix("").parts))
        return found

    return modules(hook["compile"]) - modules(hook.get("exclude", []))


@pytest.mark.both_builds
def test_the_installed_build_is_the_one_asked_for() -> None:
    """Compiled, unless KAFKASIM_PURE asked for the pure package: a build that fell back to pure Python on a
    machine with a C compiler (a mypyc error, say) fails here rather than silently running 2x slower."""
    if PURE_REQUESTED:
        assert compiled_modules() == []
        return
    assert set(compiled_modules()) == configured_modules(), (
        "hatch_build.py did not compile every module pyproject.toml lists; `uv sync --reinstall-package "
        "kafkasim -v` shows why"
    )
    assert stale_sources() == []


MARKS = ("pure_only", "both_builds")


def marked_modules(tests: Path) -> list[str]:
    """The test modules under ``tests`` that name a mark of MARKS (relative to its parent): the pure copy collects
    only these; collecting the whole suite interpreted, to deselect all but a thirtieth of it, took 22 s."""
    return sorted(str(path.relative_to(tests.parent)) for path in tests.rglob("test_*.py")
                  if any(mark in path.read_text(encoding="utf-8") for mark in MARKS))


@pytest.mark.skipif(not compiled_modules(), reason="the installed build is the pure one: the suite itself ran on it")
def test_pure_copy_gives_the_same_results(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    modules = marked_modules(ROOT / "tests")
    # A marked test whose module the scan would miss (a mark applied from elsewhere) fails here.
    missed = sorted({item.nodeid for item in request.session.items
                     if any(mark in item.keywords for mark in MARKS)
                     and str(item.path.relative_to(ROOT)) not in modules})
    assert not missed, missed
    copy = tmp_path / "checkout"
    skip = shutil.ignore_patterns("*.so", "__pycache__", "_compiled.json", ".pytest_cache")
    for name in ("kafkasim", "tests", "scenarios", "benchmarks", "docs"):
        shutil.copytree(ROOT / name, copy / name, ignore=skip)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, copy / name)
    compiled = tmp_path / "compiled-digests.json"
    compiled.write_text(json.dumps(random_scenario_digests()))
    env = {**os.environ, "KAFKASIM_PURE": "1", COMPILED_DIGESTS: str(compiled)}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=-ra", "-m",
         " or ".join(MARKS), *modules],
        cwd=copy, env=env, capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    summary = result.stdout.strip().splitlines()[-1]
    passed = int(re.search(r"(\d+) passed", summary).group(1))  # type: ignore[union-attr]
    assert "skipped" not in summary and passed >= 10, summary


@pytest.mark.both_builds
def test_random_scenarios_give_the_compiled_builds_tables() -> None:
    """Run in the pure copy: its tables equal those the compiled build produced for the same scenarios."""
    path = os.environ.get(COMPILED_DIGESTS)
    if path is None:
        pytest.skip("compares the pure copy with the compiled build: runs inside test_pure_copy_gives_the_same_results")
    assert random_scenario_digests() == json.loads(Path(path).read_text())


def test_uv_rebuilds_when_any_compiled_source_changes() -> None:
    """Every compiled module's source is under one of [tool.uv] cache-keys' globs: uv rebuilds (recompiles)
    the editable install when it changes, so no extension module outlives its source."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    globs = [key["file"] for key in config["tool"]["uv"]["cache-keys"] if "file" in key]
    uncovered = [
        module for module in sorted(configured_modules())
        if not any(fnmatch.fnmatch(module.replace(".", "/") + ".py", glob.replace("**/", "")) or
                   fnmatch.fnmatch(module.replace(".", "/") + ".py", glob) for glob in globs)
    ]
    assert uncovered == []


def test_a_source_changed_since_the_build_is_reported(tmp_path: Path) -> None:
    source = tmp_path / "kafkasim" / "timer" / "timing_wheel.py"
    source.parent.mkdir(parents=True)
    source.write_text("x = 1\n")
    manifest = tmp_path / "_compiled.json"
    manifest.write_text(json.dumps({"sources": {"kafkasim/timer/timing_wheel.py": hashlib.sha256(b"x = 1\n").hexdigest()}}))
    assert stale_sources(manifest, tmp_path) == []
    source.write_text("x = 2\n")
    assert stale_sources(manifest, tmp_path) == ["kafkasim/timer/timing_wheel.py"]
    assert stale_sources(tmp_path / "absent.json", tmp_path) == []


@pytest.mark.skipif(shutil.which("uv") is None, reason="builds a wheel with uv, which is not on PATH")
def test_without_a_working_c_compiler_the_wheel_is_pure_python(tmp_path: Path) -> None:
    """The fallback: compiling fails (here: a C compiler that always fails), the build says why and ships
    the pure package, tagged for any platform."""
    env = {**os.environ, "CC": "false"}
    env.pop("KAFKASIM_PURE", None)
    result = subprocess.run(["uv", "build", "--wheel", "--out-dir", str(tmp_path), str(ROOT)], env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "kafkasim build: could not compile with mypyc" in result.stderr
    wheels = [p.name for p in tmp_path.glob("*.whl")]
    assert len(wheels) == 1 and wheels[0].endswith("-py3-none-any.whl"), wheels
    with zipfile.ZipFile(tmp_path / wheels[0]) as wheel:
        names = wheel.namelist()
    assert "kafkasim/timer/timing_wheel.py" in names
    assert not [n for n in names if n.endswith(".so")]


@pytest.mark.both_builds
def test_a_hook_left_unimplemented_is_never_silently_skipped() -> None:
    """Interpreted, ABC refuses to build a TimerTask or DelayedOperation subclass missing an abstract hook.
    A compiled abstract class does not check at construction, so there the hook raises when called: in
    neither build does a forgotten ``run`` or ``try_complete`` quietly do nothing."""
    from kafkasim.purgatory import DelayedOperation
    from kafkasim.timer import TimerTask

    class ForgotRun(TimerTask):
        pass

    class ForgotHooks(DelayedOperation):
        pass

    try:
        task = ForgotRun(1)
    except TypeError:
        assert not compiled_modules()
    else:
        with pytest.raises(NotImplementedError):
            task.run()
    try:
        operation = ForgotHooks(1)
    except TypeError:
        assert not compiled_modules()
    else:
        for hook in (operation.try_complete, operation.on_complete, operation.on_expiration):
            with pytest.raises(NotImplementedError):
                hook()


def _hatch_build(monkeypatch: pytest.MonkeyPatch) -> Any:
    """hatch_build.py as a module, without hatchling (which only the build environment has)."""
    import types

    interface = types.ModuleType("hatchling.builders.hooks.plugin.interface")
    interface.BuildHookInterface = object  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, interface.__name__, interface)
    return load_script(ROOT / "hatch_build.py", "kafkasim_hatch_build")


def test_the_install_writes_bytecode_even_where_the_interpreter_may_not(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without bytecode caches every start compiles pandas, pyarrow and kafkasim from source (1.8 of a
    quickstart's 3.1 CPU s where PYTHONDONTWRITEBYTECODE is set): uv writes the dependencies' at install
    (`compile-bytecode`), the build hook an editable install's own, whatever the environment says."""
    import importlib.util

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert config["tool"]["uv"]["compile-bytecode"] is True
    hook = _hatch_build(monkeypatch)
    package = tmp_path / "kafkasim"
    (package / "sub").mkdir(parents=True)
    sources = [package / "__init__.py", package / "sub" / "module.py"]
    for source in sources:
        source.write_text("VALUE = 1\n")
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    hook._compile_bytecode(package)
    assert all(Path(importlib.util.cache_from_source(str(source))).is_file() for source in sources)


def test_the_build_compiles_through_ccache_with_paths_that_do_not_depend_on_the_checkout(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """hatch_build's ccache launcher: mypyc's runtime headers (in a build environment uv creates afresh for each
    build) are read from a copy in the build directory, so that a fresh checkout's compile hits the cache."""
    import types

    from mypyc.build import include_dir

    hook = _hatch_build(monkeypatch)
    launcher = tmp_path / "bin" / "ccache"
    launcher.parent.mkdir()
    launcher.write_text("#!/bin/sh\nexec \"$@\"\n")
    launcher.chmod(0o755)
    monkeypatch.setenv("PATH", f"{launcher.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.delenv("KAFKASIM_NO_CCACHE", raising=False)
    ext = types.SimpleNamespace(include_dirs=[include_dir(), "/elsewhere"])
    env = hook._ccache(tmp_path / "checkout", tmp_path / "out", [ext])
    assert env["CC"].startswith("ccache ") and env["CCACHE_BASEDIR"] == str((tmp_path / "checkout").resolve())
    assert ext.include_dirs == [str(tmp_path / "out" / "lib-rt"), "/elsewhere"]
    assert (tmp_path / "out" / "lib-rt" / "CPy.h").read_bytes() == (Path(include_dir()) / "CPy.h").read_bytes()
    monkeypatch.setenv("KAFKASIM_NO_CCACHE", "1")
    assert hook._ccache(tmp_path / "checkout", tmp_path / "out", [ext]) == {}


def test_an_editable_build_that_could_not_compile_says_so_at_every_command(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """uv shows a build's stderr only when the build fails, and a build that fell back to the pure package (a
    type error mypyc refused) does not: the fallback is recorded in the manifest, and `kafkasim --version`, every
    `kafkasim` command's stderr and the test suite's header say it (on 2026-12-04 a session's tests passed
    against a pure package for an hour without anyone noticing)."""
    import kafkasim.compiled as compiled
    from kafkasim.console import app

    module = _hatch_build(monkeypatch)
    (tmp_path / "kafkasim" / "timer").mkdir(parents=True)
    (tmp_path / "kafkasim" / "timer" / "wheel.py").write_text("VALUE = 1\n")

    def refuse(*_: object) -> list[str]:
        raise SystemExit(1)  # what mypyc does on a type error

    monkeypatch.setattr(module.CustomBuildHook, "_compile", refuse)
    hook = module.CustomBuildHook()
    hook.root, hook.config, hook.target_name = str(tmp_path), {"compile": ["kafkasim/timer"]}, "wheel"
    monkeypatch.delenv("KAFKASIM_PURE", raising=False)
    hook.initialize("editable", {})
    manifest = tmp_path / "kafkasim" / "_compiled.json"
    assert compiled.build_fallback(manifest) == "SystemExit: 1"
    assert "kafkasim build: could not compile with mypyc (SystemExit: 1)" in capsys.readouterr().err

    monkeypatch.setattr(compiled, "MANIFEST", manifest)
    monkeypatch.setattr(compiled, "compiled_modules", lambda: [])
    assert compiled.describe() == "pure Python: the last build could not compile with mypyc (SystemExit: 1)"
    app._warn_if_stale()
    warning = capsys.readouterr().err
    assert "could not compile kafkasim's core with mypyc (SystemExit: 1)" in warning
    assert "`uv sync --reinstall-package kafkasim`" in warning

    # A build that compiles replaces the record: the warning goes with it.
    monkeypatch.setattr(module.CustomBuildHook, "_compile", lambda *_: [])
    monkeypatch.setattr(module.CustomBuildHook, "_install_in_place",
                        lambda self, root, out, built, sources: module._write_manifest(root, {"extensions": []}))
    hook.initialize("editable", {})
    assert compiled.build_fallback(manifest) is None
    capsys.readouterr()
    app._warn_if_stale()
    assert capsys.readouterr().err == ""
