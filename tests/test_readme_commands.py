"""Every `uv run ...` command in README.md works as written on a fresh machine.

Each command runs in a scratch copy of the repository, in a fresh environment (`UV_PROJECT_ENVIRONMENT`) made
for its `--extra` options alone, and shared by the commands that give the same ones, so it gets exactly the
packages its own `--extra` options install and nothing the test suite's environment happens to have:
`uv run kafkasim sweep ...` without `--extra spark` fails here as it fails for a newcomer. A command passes
when it exits 0, or when it is still going after `START_BUDGET_S` (or has printed the line that shows its real
work began) without an error: a long job (a sweep, a 30 s simulation, JupyterLab) has then started, and is
stopped. Placeholders in a command
(`scenarios/<name>.yaml`, `FILE...`, `SWEEP.yaml`, `DIR`) are filled with real files first; the test
command (`pytest`) is only collected, so that it does not run the suite inside the suite.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

# One worker runs them all (pytest-xdist --dist loadgroup): the scratch copy and its saved runs are made once.
pytestmark = pytest.mark.xdist_group("readme-commands")

ROOT = Path(__file__).resolve().parent.parent
START_BUDGET_S = 25.0
PLACEHOLDERS = {
    "scenarios/<name>.yaml": "scenarios/quickstart.yaml",
    "FILE...": "scenarios/quickstart.yaml scenarios/sweeps/fetch_wait_x_acks.yaml",
    "SWEEP.yaml": "scenarios/sweeps/fetch_wait_x_acks.yaml",
    "DIR": "runs/readme-sweep",
}
# A line that shows the command got past its arguments and imports into its real work.
STARTED = re.compile(r"kafkasim: running |kafkasim: starting a KRaft controller|^sweep \S+: \d+ variant|kafkasim: fitting |"
                     r"Jupyter Server .* is running at", re.M)
IGNORED = ("runs", "results", ".venv", ".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache",
           ".hypothesis", "spark-warehouse", "*.egg-info", ".ipynb_checkpoints")


def readme_uv_commands() -> list[str]:
    """`uv run` commands of README.md: lines of its bash blocks and inline code spans, comments cut."""
    text = (ROOT / "README.md").read_text()
    found: list[str] = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.splitlines():
            command = line.split("#")[0].strip().removeprefix("pip install uv && ")
            if command.startswith("uv run "):
                found.append(command)
    for span in re.findall(r"`(uv run [^`]+)`", text):
        found.append(" ".join(span.split()))
    commands = []
    for command in dict.fromkeys(found):
        if command.endswith(" ..."):
            continue  # `uv run --extra spark ...`: how to add an extra, not a command
        for placeholder, value in PLACEHOLDERS.items():
            command = command.replace(placeholder, value)
        commands.append(command)
    return list(dict.fromkeys(commands))


def test_the_readme_has_the_commands_this_test_runs() -> None:
    commands = readme_uv_commands()
    assert "uv run kafkasim run scenarios/quickstart.yaml" in commands
    assert any(" sweep " in command for command in commands)
    assert not [command for command in commands if re.search(r"<|\.\.\.|\b[A-Z]{3,}\b", command)]


# Results the README's commands read, as its earlier commands write them (`kafkasim run` of the quickstart,
# and with linger.ms=0), shortened: a command that is stopped once it has started writes no result.
SAVED_RUNS = {
    "runs/quickstart-42": [],
    "runs/linger0": ["--set", "producers[0].linger.ms=0"],
    "runs/leader_crash-11": ["scenarios/leader_crash.yaml", "--set", "faults[0].at=3s"],
    # The calibration scenario samples its gauges once a run: shortened, at its end.
    "runs/base-kafka": ["scenarios/calibration_base.yaml", "--set", "sample_interval=6s"],
}
# What `--on-kafka` would write, for the command that compares it: a copy of the simulated run stands in (the
# real run itself is tested by tests/real/, which runs it for minutes).
STAND_INS = {"runs/leader_crash-11-kafka": "runs/leader_crash-11"}
PRESET_STAND_INS = {"fitted.yaml": "presets/this-machine.yaml"}


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy = tmp_path_factory.mktemp("readme") / "kafkasim"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(*IGNORED), symlinks=True)
    for out, extra in SAVED_RUNS.items():
        scenario = extra[0] if extra and extra[0].endswith(".yaml") else "scenarios/quickstart.yaml"
        extra = extra[1:] if extra and extra[0].endswith(".yaml") else extra
        subprocess.run(
            [sys.executable, "-m", "kafkasim", "run", scenario, *extra, "--set", "duration=6s",
             "--no-figures", "--out", out],
            cwd=copy, check=True, capture_output=True, timeout=300,
        )
    for out, source in STAND_INS.items():
        shutil.copytree(copy / source, copy / out)
    # What `kafkasim calibrate` would write (a command stopped once it has started writes nothing): the
    # project's own fitted preset stands in.
    for out, source in PRESET_STAND_INS.items():
        shutil.copyfile(copy / source, copy / out)
    return copy


def _stop(process: subprocess.Popen[bytes]) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=10)
            return
        except subprocess.TimeoutExpired:
            continue


def uv_options(argv: list[str]) -> list[str]:
    """The options of `uv run` before the command (`--extra dev`, `--all-extras`): what decides its environment."""
    options: list[str] = []
    rest = iter(argv[2:])
    for word in rest:
        if not word.startswith("-"):
            break
        options.append(word)
        if word in ("--extra", "--group", "--with") and (value := next(rest, None)) is not None:
            options.append(value)
    return options


def ci_uv_commands() -> set[str]:
    """The `uv run` commands .ci/run runs itself, verbatim, on its fresh checkout and environment (none in a copy
    of the package without .ci/, such as tests/test_builds.py's pure copy)."""
    script = ROOT / ".ci" / "run"
    lines = script.read_text().splitlines() if script.is_file() else []
    return {" ".join(line.split()) for line in lines if line.startswith("uv run ")}


def test_commands_that_give_the_same_uv_options_share_one_environment() -> None:
    assert uv_options(shlex.split("uv run kafkasim report runs/quickstart-42")) == []
    assert uv_options(shlex.split("uv run --extra dev python notebooks/make_quickstart.py")) == ["--extra", "dev"]
    assert uv_options(shlex.split("uv run --all-extras pytest")) == ["--all-extras"]
    # The command's own options are its, not uv's.
    assert uv_options(shlex.split("uv run kafkasim run x.yaml --set a=1 --extra b")) == []


def test_the_commands_ci_runs_itself_are_readme_commands() -> None:
    # What the test below leaves to .ci/run: the README's test command and the linters, each run there as written.
    both = ci_uv_commands() & set(readme_uv_commands())
    assert {"uv run --all-extras pytest", "uv run --extra dev mypy", "uv run kafkasim --version"} <= both


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("uv") is None, reason="needs uv, as the README does")
@pytest.mark.parametrize("command", [
    pytest.param(c, marks=pytest.mark.skip(reason=".ci/run runs this command itself, as written, on a fresh "
                                                  "checkout and environment"))
    if c in ci_uv_commands() else c for c in readme_uv_commands()])
def test_a_readme_command_starts_on_a_fresh_environment(command: str, scratch: Path) -> None:
    argv = shlex.split(command)
    if argv[2:] and argv[-1] == "pytest":
        argv += ["--collect-only", "-q", "-p", "no:cacheprovider"]
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    slug = re.sub(r"[^A-Za-z0-9]+", "-", command)[:80]
    env.update(
        # One fresh environment per set of extras the command asks for (`uv run`, `uv run --extra dev`, ...): it
        # holds exactly what those install, as a newcomer's does. One per command had each spend most of
        # START_BUDGET_S compiling the bytecode of its ~5,000 installed files (pyproject's `compile-bytecode`:
        # 11 s on a quiet machine, 20 s and more beside the suite): in CI nine commands were stopped still going,
        # some perhaps before they had begun, and passed.
        UV_PROJECT_ENVIRONMENT=str(scratch.parent / "envs" / ("uv-run" + "".join(
            f"-{re.sub(r'[^A-Za-z0-9]+', '-', option)}" for option in uv_options(argv)))),
        UV_FROZEN="1",  # uv.lock as committed: a stale lock fails here rather than being rewritten
        PYTHONUNBUFFERED="1",  # the line that shows a long job started arrives when printed
        BROWSER="true",  # JupyterLab opens no browser
        JUPYTER_RUNTIME_DIR=str(scratch.parent / "jupyter-runtime"),
        # The pure build (hatch_build.py): compiling the core with mypyc takes minutes on 2 cores, longer than
        # START_BUDGET_S, so each worker's first commands passed while still compiling, before kafkasim ran at all.
        # The compiled build on a fresh environment is .ci/run's own (its `uv run` commands) and test_builds'.
        KAFKASIM_PURE="1",
    )
    if os.geteuid() == 0:  # CI runs as root, which JupyterLab refuses without this (a user is not root)
        config = scratch.parent / "jupyter-config"
        config.mkdir(exist_ok=True)
        (config / "jupyter_server_config.json").write_text('{"ServerApp": {"allow_root": true}}')
        env["JUPYTER_CONFIG_DIR"] = str(config)
    log_path = scratch.parent / f"{slug}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(argv, cwd=scratch, env=env, stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + START_BUDGET_S
        try:
            while process.poll() is None and time.monotonic() < deadline:
                if STARTED.search(log_path.read_text(errors="replace")):
                    break
                time.sleep(0.2)
        finally:
            code = process.poll()
            # What it wrote until now is its behaviour; what it prints while being stopped (a notebook's kernel
            # killed under nbclient, for one) is not.
            output = log_path.read_text(errors="replace")
            _stop(process)
    if code is not None and code != 0 and " sweep " in command and "Java" in output:
        pytest.skip(f"sweeps need Java 17+, as the README says: {output.strip().splitlines()[-1]}")
    assert code in (None, 0), f"`{command}` exited {code}:\n{output[-3000:]}"
    assert "Traceback" not in output and "rror:" not in output, f"`{command}`:\n{output[-3000:]}"
