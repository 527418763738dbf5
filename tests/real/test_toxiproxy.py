"""Toxiproxy as kafkasim runs it (kafkasim.real.toxiproxy): built from its Go module, started as a managed
process, a latency toxic that delays the bytes of one direction by what it says, a reset_peer toxic that
resets the connection, and nothing left running afterwards."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkasim.real import toxiproxy
from kafkasim.real.kafka_libs import RealKafkaUnavailable
from kafkasim.real.processes import Processes, alive
from kafkasim.real.toxiproxy import Toxiproxy, ToxiproxyError

LATENCY_MS = 120
SLACK_MS = 80.0
"""Above the toxic's latency a round trip may take this much more: loopback and the proxy's copy take well
under a millisecond, but two shared cores can deschedule the proxy or this test's threads for tens of ms. Below
the latency it may take nothing: the toxic holds each chunk until ``latency`` after it was read."""


def _echo(conn: socket.socket) -> None:
    with conn, contextlib.suppress(OSError):
        while data := conn.recv(4096):
            conn.sendall(data)


def _serve(listener: socket.socket) -> None:
    with contextlib.suppress(OSError):  # the listener closed: the test is over
        while True:
            conn, _ = listener.accept()
            threading.Thread(target=_echo, args=(conn,), daemon=True).start()


@pytest.fixture
def echo() -> Iterator[int]:
    """An echo server on a free port of 127.0.0.1, a thread per connection."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        threading.Thread(target=_serve, args=(listener,), daemon=True).start()
        yield listener.getsockname()[1]


@pytest.fixture
def proxy(toxiproxy_server: Path, tmp_path: Path) -> Iterator[Toxiproxy]:
    with Processes() as procs:
        server = Toxiproxy(procs, toxiproxy_server, tmp_path / "toxiproxy.log")
        server.start()
        yield server
        server.stop()
        assert server.proc is not None and alive([server.proc.pid]) == []


def _round_trip_ms(sock: socket.socket) -> float:
    started = time.monotonic()
    sock.sendall(b"ping")
    got = b""
    while len(got) < 4:
        chunk = sock.recv(4)
        assert chunk, "the proxy closed the connection"
        got += chunk
    return (time.monotonic() - started) * 1000.0


def _median_round_trip_ms(port: int, count: int = 5) -> float:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        trips = sorted(_round_trip_ms(sock) for _ in range(count))
    return trips[count // 2]


def test_a_latency_toxic_delays_each_direction_by_its_latency(proxy: Toxiproxy, echo: int) -> None:
    port = proxy.add_proxy("echo", f"127.0.0.1:{echo}")
    base = _median_round_trip_ms(port)
    assert base < SLACK_MS, base
    proxy.add_latency("echo", "slow-down", "downstream", LATENCY_MS)
    one_way = _median_round_trip_ms(port)
    assert LATENCY_MS <= one_way <= LATENCY_MS + SLACK_MS, one_way
    proxy.add_latency("echo", "slow-up", "upstream", LATENCY_MS)
    both = _median_round_trip_ms(port)
    assert 2 * LATENCY_MS <= both <= 2 * LATENCY_MS + SLACK_MS, both
    assert {t["name"] for t in proxy.toxics("echo")} == {"slow-down", "slow-up"}
    proxy.remove_toxic("echo", "slow-down")
    proxy.remove_toxic("echo", "slow-up")
    assert _median_round_trip_ms(port) < SLACK_MS
    assert proxy.toxics("echo") == []


def test_a_reset_peer_toxic_resets_a_new_connection_and_closes_an_open_one(proxy: Toxiproxy, echo: int) -> None:
    """Toxiproxy 2.5.0's reset_peer: a connection opened while the toxic is there is reset (RST: the client sees
    ECONNRESET); one that was open before it came is closed with a FIN (the client reads end of stream). A
    connection_reset fault built on it must open its connections after the toxic, or accept a clean close."""
    port = proxy.add_proxy("echo", f"127.0.0.1:{echo}")
    with socket.create_connection(("127.0.0.1", port), timeout=5) as before:
        assert _round_trip_ms(before) < 1000
        proxy.add_reset_peer("echo", "rst", "upstream", timeout_ms=0)
        with socket.create_connection(("127.0.0.1", port), timeout=5) as after:
            after.sendall(b"ping")
            with pytest.raises(ConnectionResetError):
                after.recv(4)
        before.sendall(b"ping")
        assert before.recv(4) == b""
    proxy.remove_toxic("echo", "rst")
    assert _median_round_trip_ms(port) < SLACK_MS


def test_a_reset_closes_every_open_connection_both_sides_and_new_ones_get_through(proxy: Toxiproxy) -> None:
    """Toxiproxy.reset (a connection_reset on the real cluster): every connection through the proxy is closed at
    once, idle ones included, on the client's side (it reads end of stream) and on the upstream's (the server
    reads end of stream: a broker then drops what it still writes); a connection made afterwards, on the same
    port, works."""
    closed: list[threading.Event] = []

    def serve(listener: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = listener.accept()
                done = threading.Event()
                closed.append(done)

                def run(conn: socket.socket = conn, done: threading.Event = done) -> None:
                    _echo(conn)
                    done.set()

                threading.Thread(target=run, daemon=True).start()

    with socket.create_server(("127.0.0.1", 0)) as listener:
        threading.Thread(target=serve, args=(listener,), daemon=True).start()
        port = proxy.add_proxy("echo", f"127.0.0.1:{listener.getsockname()[1]}")
        with socket.create_connection(("127.0.0.1", port), timeout=5) as busy, \
                socket.create_connection(("127.0.0.1", port), timeout=5) as idle:
            assert _round_trip_ms(busy) < 1000
            idle.sendall(b"ping")
            assert idle.recv(4) == b"ping"
            assert len(closed) == 2 and not any(e.is_set() for e in closed)
            proxy.reset("echo")
            assert busy.recv(4) == b"" and idle.recv(4) == b""  # no data sent since: closed by the proxy
            assert all(e.wait(5) for e in closed)  # the upstream's side too
        assert _median_round_trip_ms(port) < SLACK_MS


def test_an_unknown_proxy_is_refused_with_toxiproxys_answer(proxy: Toxiproxy) -> None:
    with pytest.raises(ToxiproxyError, match="404"):
        proxy.add_latency("nothing-here", "slow", "upstream", 10)


def test_no_go_and_no_built_server_is_one_line_saying_what_to_install(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("GOROOT", raising=False)
    monkeypatch.setattr(toxiproxy, "GO_INSTALL_ROOT", tmp_path / "no-go")
    with pytest.raises(RealKafkaUnavailable) as caught:
        toxiproxy.server_binary()
    message = str(caught.value)
    assert "\n" not in message and "Go was not found" in message and "golang-go" in message
