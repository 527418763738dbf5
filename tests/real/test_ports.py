"""A real run's listening ports (kafkasim.real.ports): outside the kernel's ephemeral range, so that no
outgoing connection takes a port while its node is down, and claimed machine-wide, so that two runs at once
never draw the same one."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from kafkasim.real import ports


@pytest.fixture
def claims(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(ports, "claims_directory", lambda: tmp_path / "claims")
    monkeypatch.setattr(ports, "_mine", set())
    return tmp_path / "claims"


def test_ports_lie_outside_the_ephemeral_range_and_are_free(claims: Path) -> None:
    # The defect: ports drawn by binding port 0 lie inside the range the kernel hands to outgoing connections.
    # A broker crashed at 14 s and started again at 30 s found its JMX port taken and exited with code 1.
    low, high = ports.ephemeral_range()
    got = ports.claim(12)
    assert len(set(got)) == 12
    assert all(not low <= p <= high for p in got), (got, low, high)
    for p in got:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", p))  # free: nothing listens on it
    assert sorted(int(f.name) for f in claims.iterdir() if f.name.isdigit()) == sorted(got)
    ports.release(got)
    assert [f.name for f in claims.iterdir() if f.name.isdigit()] == []


def test_the_drawing_range_is_below_the_ephemeral_range_else_above_it() -> None:
    assert ports.drawing_range((32768, 60999)) == (ports.LOWEST, 32767)
    assert ports.drawing_range((1024, 60999)) == (61000, 65535)
    assert ports.drawing_range((1024, 65000)) == (ports.LOWEST, 65535)  # no room: anywhere


def test_a_port_claimed_by_a_live_process_is_not_drawn_and_a_dead_ones_claim_is_taken_over(
        claims: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ports, "LOWEST", 41000)
    monkeypatch.setattr(ports, "MIN_ROOM", 0)
    span = (41010, 60999)  # draws from 41000-41009
    free = [p for p in range(41000, 41010) if ports._bindable("127.0.0.1", p)]
    assert len(free) >= 6, "ports 41000-41009 are mostly in use on this machine"
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    try:
        claims.mkdir()
        for p in free[:3]:
            (claims / str(p)).write_text(f"{other.pid}\n")
        (claims / str(free[3])).write_text(f"{int(dead.stdout)}\n")
        got = ports.claim(len(free) - 3, ephemeral=span)
        assert sorted(got) == free[3:]
        with pytest.raises(ports.NoFreePorts, match=r"found 0 of 1 free ports in 41000-41009 on 127.0.0.1"):
            ports.claim(1, ephemeral=span)
        ports.release(got)
        assert sorted(ports.claim(len(free) - 3, ephemeral=span)) == free[3:]
    finally:
        other.kill()
        other.wait()


def test_two_processes_claiming_at_once_get_different_ports(tmp_path: Path) -> None:
    # Twelve ports for eight claims: tight enough that two draws without the lock would meet, with room for a
    # port some other process holds. Below 10000, where no real run claims and (below the kernel's ephemeral
    # range) no outgoing connection lands: in 42000-42007, inside that range, a connection of the suite's other
    # worker once took one of the eight ports this test had.
    code = ("import sys, tempfile, time; tempfile.tempdir = sys.argv[1]\n"
            "from kafkasim.real import ports\n"
            "ports.LOWEST = 9500; ports.MIN_ROOM = 0\n"
            "print(' '.join(map(str, ports.claim(4, ephemeral=(9512, 60999)))), flush=True)\n"
            "time.sleep(1)\n")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    got = [set(map(int, proc.communicate(timeout=60)[0].split())) for proc in procs]
    assert all(proc.returncode == 0 for proc in procs)
    assert len(got[0]) == len(got[1]) == 4 and not got[0] & got[1], got
