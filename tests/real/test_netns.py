"""The hosts' network of a real run with network faults (kafkasim.real.netns): a cut is a pulled cable (no
error to the sender, TCP retransmits, the connection survives it), one direction at a time, nested cuts heal
with the last; nothing is left behind, whatever ends the run; without root the fault is refused in one line."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafkasim import load_scenario
from kafkasim.real import netns
from kafkasim.real.config_map import refusals
from kafkasim.real.netns import HostNetwork
from kafkasim.scenario import LinkDropFault

ROOT = Path(__file__).resolve().parents[2]

needs_namespaces = pytest.mark.skipif(netns.unavailable_reason() is not None,
                                      reason=str(netns.unavailable_reason()))

SERVER = """
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind((sys.argv[1], 9999)); s.listen()
print("listening", flush=True)
c, _ = s.accept()
got = b""
while True:
    d = c.recv(100)
    if not d: break
    got += d
    print(round(time.monotonic(), 2), got.decode(), flush=True)
"""

CLIENT = """
import socket, sys, time
c = socket.create_connection((sys.argv[1], 9999), timeout=5)
print("connected", flush=True)
for line in sys.stdin:
    try:
        c.send(line.strip().encode()); print("sent", line.strip(), flush=True)
    except OSError as e:
        print("error", e, flush=True)
c.close()
"""

CONNECT = """
import socket, sys, time
t = time.monotonic()
try:
    socket.create_connection((sys.argv[1], 9999), timeout=1.5); print("connected")
except OSError as e:
    print(type(e).__name__, round(time.monotonic() - t, 1))
"""


def _in(net: HostNetwork, host: str, code: str, *args: str, **kw: object) -> subprocess.Popen[str]:
    return subprocess.Popen([*net.exec_prefix(host), sys.executable, "-c", code, *args], text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **kw)  # type: ignore[call-overload]


def _left_behind() -> tuple[list[str], list[str]]:
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout.splitlines()
    return netns.ours(os.getpid()), [line for line in links if "kafkasim" in line or ": h0" in line]


@needs_namespaces
def test_a_cut_is_a_pulled_cable_and_the_connection_survives_it() -> None:
    with HostNetwork(["a", "b"]) as net:
        server = _in(net, "b", SERVER, net.address["b"])
        assert server.stdout is not None and server.stdout.readline().strip() == "listening"
        client = _in(net, "a", CLIENT, net.address["b"], stdin=subprocess.PIPE)
        assert client.stdin is not None and client.stdout is not None
        assert client.stdout.readline().strip() == "connected"
        client.stdin.write("1\n")
        client.stdin.flush()
        assert client.stdout.readline().strip() == "sent 1"
        assert server.stdout.readline().split()[1] == "1"
        net.cut("a", "b")
        net.cut("a", "b")  # nested: healed with the last
        client.stdin.write("2\n")
        client.stdin.flush()
        assert client.stdout.readline().strip() == "sent 2"  # no error to the sender
        # A new connection cannot be set up across the cut: its SYNs are lost (a timeout, not a refusal).
        assert _in(net, "a", CONNECT, net.address["b"]).communicate(timeout=10)[0].split()[0] == "TimeoutError"
        net.heal("a", "b")
        assert net.cuts == [("a", "b")]
        net.heal("a", "b")
        assert net.cuts == []
        # TCP retransmits what was written during the cut: it arrives once the cable is back.
        started = time.monotonic()
        line = server.stdout.readline().split()
        assert line[1] == "12" and time.monotonic() - started < 10, line
        client.stdin.close()
        client.wait(timeout=10)
        server.wait(timeout=10)
    assert _left_behind() == ([], [])


@needs_namespaces
def test_nothing_is_left_when_an_exception_unwinds_the_run() -> None:
    with pytest.raises(KeyboardInterrupt), HostNetwork(["controller", "broker-0", "clients"]) as net:
        assert set(netns.ours(os.getpid())) == {*net.namespace.values(), net.router}
        net.cut("broker-0", "controller")
        raise KeyboardInterrupt
    assert _left_behind() == ([], [])


@needs_namespaces
def test_a_process_started_through_ip_netns_exec_keeps_its_pid() -> None:
    with HostNetwork(["a"]) as net:
        proc = subprocess.Popen([*net.exec_prefix("a"), "sleep", "5"], start_new_session=True)
        try:
            time.sleep(0.5)
            assert Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")[0] == b"sleep"
        finally:
            proc.kill()
            proc.wait()


def test_without_root_a_network_partition_is_refused_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    problems = refusals(load_scenario(ROOT / "scenarios/follower_partitioned_from_leader.yaml"))
    assert len(problems) == 1 and "\n" not in problems[0]
    assert problems[0].startswith("faults[0] (network_partition broker-2 | broker-0): ") and "root" in problems[0]


def test_a_side_with_some_of_the_clients_but_not_all_is_refused(monkeypatch: pytest.MonkeyPatch,
                                                                  tmp_path: Path) -> None:
    monkeypatch.setattr(netns, "unavailable_reason", lambda: None)
    text = (ROOT / "scenarios/follower_partitioned_from_leader.yaml").read_text()
    for sides, refused in [("[[broker-2], [broker-0]]", False),
                           ("[[orders-acks-all, consumer-1], [broker-0, controller]]", False),
                           ("[[orders-acks-all], [broker-0]]", True),  # consumer-1 would be cut with it
                           ("[[orders-acks-all, broker-1], [consumer-1, broker-0]]", True)]:
        path = tmp_path / "s.yaml"
        path.write_text(text.replace("sides: [[broker-2], [broker-0]]", f"sides: {sides}"))
        problems = refusals(load_scenario(path))
        assert bool(problems) == refused, (sides, problems)
        assert all("the load driver's clients share one host" in p for p in problems)


def test_link_faults_are_refused_saying_why(monkeypatch: pytest.MonkeyPatch) -> None:
    """A link_drop cuts the load driver's host: only a scenario's sole client can have one; a broker's or
    follower's is refused (its host carries every connection to it); without root it is refused as a
    partition is; a proxied fault (reset, delay) cannot share a run with it."""
    monkeypatch.setattr(netns, "unavailable_reason", lambda: None)
    drop = load_scenario(ROOT / "scenarios/idempotence_and_a_lost_response.yaml")
    drop.faults[0] = LinkDropFault.model_validate({"target": "idempotent", "at": "10s", "duration": "100ms"})
    problems = refusals(drop)
    assert problems[0].startswith("faults[0] (link_drop idempotent): the load driver's clients share one host")
    assert "not-idempotent, reader" in problems[0]
    # The reset of faults[1] goes through proxies the namespaces cannot reach.
    assert problems[1].startswith("faults[1] (connection_reset not-idempotent): ") and "127.0.0.1" in problems[1]
    assert len(problems) == 2 and all("\n" not in p for p in problems)
    follower = load_scenario(ROOT / "scenarios/follower_partitioned_from_leader.yaml")
    follower.faults[0] = LinkDropFault.model_validate({"target": "broker-2", "at": "10s", "duration": "1s"})
    assert [p.split(": ", 1)[1].split(" (")[0] for p in refusals(follower)] == [
        "only a producer's or consumer's link can be taken down on a real cluster here"]
    monkeypatch.setattr(netns, "unavailable_reason", lambda: "network faults on a real cluster need root")
    assert "need root" in refusals(follower)[0]
