"""Spool directories of runs that were killed are cleared when a run starts; nothing else is (issue 26, item 8:
nine of them, up to 6 MB each, stayed forever in the temporary directory)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kafkasim.record import spool_dir
from kafkasim.record.spool_dir import OWNER_FILE, clear_abandoned_spools, make_spool_dir

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")

# A run's spool directory made in another process, which is then killed (it never deletes it).
_KILLED = """
import os, signal, sys
from pathlib import Path
from kafkasim.record.spool_dir import make_spool_dir
path = make_spool_dir(Path(sys.argv[1]))
(path / "requests.parquet").write_bytes(b"PAR1")
print(path, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def _killed_run(parent: Path) -> Path:
    done = subprocess.run([sys.executable, "-c", _KILLED, str(parent)], capture_output=True, text=True, timeout=60)
    assert done.returncode == -9, done.stderr
    return Path(done.stdout.strip())


def _owner(path: Path) -> dict[str, object]:
    return json.loads((path / OWNER_FILE).read_text())


def _rewrite_owner(path: Path, **changes: object) -> None:
    (path / OWNER_FILE).write_text(json.dumps({**_owner(path), **changes}))


def test_the_spool_of_a_killed_run_is_cleared_and_a_live_runs_is_kept(tmp_path: Path) -> None:
    killed = _killed_run(tmp_path)
    assert killed.is_dir() and killed.name.startswith("kafkasim-spool-")
    mine = make_spool_dir(tmp_path)
    assert _owner(mine)["pid"] == os.getpid()
    assert clear_abandoned_spools(tmp_path) == [killed]
    assert not killed.exists() and mine.is_dir()


def test_a_reused_process_id_does_not_keep_a_spool_alive(tmp_path: Path) -> None:
    # The owner's id now names another process (here: this one), started at another time.
    reused = make_spool_dir(tmp_path)
    _rewrite_owner(reused, start_ticks=int(_owner(reused)["start_ticks"]) - 1)  # type: ignore[call-overload]
    alive = make_spool_dir(tmp_path)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        other = make_spool_dir(tmp_path)  # owned by a live process that is not this one
        stat = Path(f"/proc/{child.pid}/stat").read_text()
        _rewrite_owner(other, pid=child.pid, start_ticks=int(stat[stat.rindex(")") + 2:].split()[19]))
        assert clear_abandoned_spools(tmp_path) == [reused]
        assert alive.is_dir() and other.is_dir()
    finally:
        child.kill()  # the child this test started, by its own handle
        child.wait()


def test_a_spool_from_before_a_restart_is_cleared(tmp_path: Path) -> None:
    old = make_spool_dir(tmp_path)
    _rewrite_owner(old, boot_id="00000000-0000-0000-0000-000000000000")
    assert clear_abandoned_spools(tmp_path) == [old]


@pytest.mark.parametrize("case", ["no owner file", "a foreign file", "another pid namespace", "not a spool",
                                  "a symbolic link", "an unreadable owner"])
def test_what_is_not_clearly_an_abandoned_spool_is_never_deleted(tmp_path: Path, case: str) -> None:
    dead = _killed_run(tmp_path)
    if case == "no owner file":
        (dead / OWNER_FILE).unlink()
    elif case == "a foreign file":
        (dead / "thesis.tex").write_text("...")
    elif case == "another pid namespace":  # a container sharing the temporary directory: its ids mean nothing here
        _rewrite_owner(dead, pid_namespace="pid:[1]")
    elif case == "not a spool":
        dead = dead.rename(tmp_path / "my-spool-notes")
    elif case == "a symbolic link":
        dead = dead.rename(tmp_path / "elsewhere")
        (tmp_path / "kafkasim-spool-link").symlink_to(dead, target_is_directory=True)
    else:
        (dead / OWNER_FILE).write_text("{not json")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    assert clear_abandoned_spools(tmp_path) == []
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_a_run_clears_the_spools_of_killed_runs_when_it_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    from kafkasim.run.engine import Engine
    from tests.engine.support import scenario

    killed = _killed_run(tmp_path)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(spool_dir, "_cleared_by", {})
    Engine(scenario(duration="1s"))
    assert not killed.exists()
