"""Toxiproxy (Shopify's TCP proxy with "toxics": latency, reset_peer, ...): built from its Go module once, run as
a managed process, driven through its HTTP API.

There are no tc/netem qdiscs on this kernel, so a delay on one client's or one follower's links is a proxy
in the path: the traffic goes through a Toxiproxy proxy (a listening port forwarding to the broker) and a
toxic on that proxy delays or resets it. Toxiproxy's streams are named from the client's side:
``upstream`` is toward the server (kafkasim's ``to_broker``), ``downstream`` from it (``from_broker``).

The server is built with ``go install github.com/Shopify/toxiproxy/v2/cmd/server@v<TOXIPROXY_VERSION>``
(from the Go module proxy) into the user cache beside Kafka's jars (``kafka_libs.cache_root()``), once; no Go
and no built server: `RealKafkaUnavailable`, one line saying what to install (the CLI exits 2). The server
runs in its own process group (``processes.Processes``) on a free port and is stopped by pid with the run.

Its latency toxic (toxics/latency.go, ``LatencyToxic.Pipe``) holds each chunk read from the socket until
``latency`` (+ a jitter drawn uniformly in whole milliseconds) after it was read, in order; removing the
toxic lets what it holds through at once. The reset_peer toxic (``ResetToxic``) closes the connection with
SO_LINGER 0 -- a TCP RST -- ``timeout`` ms after the first data it sees on its stream (a connection opened
while it is there; one already open is closed with a FIN: ``Toxiproxy.add_reset_peer``).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from kafkasim.real import ports as listen_ports
from kafkasim.real.kafka_libs import RealKafkaUnavailable, cache_root
from kafkasim.real.processes import Proc, Processes

TOXIPROXY_VERSION = "2.5.0"
TOXIPROXY_MODULE = "github.com/Shopify/toxiproxy/v2"
GO_HINT = ("install Go 1.17 or newer (`apt-get install golang-go`; macOS: `brew install go`) and put it on PATH, "
           "or set GOROOT")
GO_INSTALL_ROOT = Path("/usr/local/go")
"""Where Go's own installer puts it (and where a machine of the project's kind has it, maybe not on PATH)."""
START_TIMEOUT_S = 30.0
Stream = Literal["upstream", "downstream"]
"""Toxiproxy's direction of a toxic: ``upstream`` client -> server (to_broker), ``downstream`` server -> client."""
STREAM_OF_DIRECTION: dict[str, tuple[Stream, ...]] = {
    "to_broker": ("upstream",), "from_broker": ("downstream",), "both": ("upstream", "downstream"),
}


def find_go() -> str:
    """The ``go`` command: on PATH, else ``$GOROOT/bin/go``, else Go's own install location ``/usr/local/go``."""
    found = shutil.which("go")
    if found:
        return found
    for root in (os.environ.get("GOROOT"), GO_INSTALL_ROOT):
        if root and (Path(root) / "bin" / "go").is_file():
            return str(Path(root) / "bin" / "go")
    raise RealKafkaUnavailable(f"a link fault on a real cluster runs through Toxiproxy, which is built with Go, "
                               f"and Go was not found; {GO_HINT}")


def server_path() -> Path:
    return cache_root() / f"toxiproxy-{TOXIPROXY_VERSION}" / "toxiproxy-server"


def server_binary(*, progress: Callable[[str], None] | None = None) -> Path:
    """toxiproxy-server, built from its Go module into the user cache the first time (about a minute and a
    half on two cores, the module's download included); later calls take it from there."""
    target = server_path()
    if target.is_file():
        return target
    go = find_go()
    target.parent.mkdir(parents=True, exist_ok=True)
    # One build at a time (two test workers, two runs): the second waits and takes the first one's binary.
    with open(target.parent / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not target.is_file():
            if progress is not None:
                progress(f"building Toxiproxy {TOXIPROXY_VERSION} with Go (once, into {target.parent})")
            _build(go, target)
    return target


def _build(go: str, target: Path) -> None:
    work = Path(tempfile.mkdtemp(prefix=".build-", dir=target.parent))
    try:
        env = {**os.environ, "GOBIN": str(work), "GOFLAGS": "-buildvcs=false", "CGO_ENABLED": "0"}
        # `go install pkg@version` builds outside any module: the working directory is irrelevant (not the repo).
        result = subprocess.run([go, "install", f"{TOXIPROXY_MODULE}/cmd/server@v{TOXIPROXY_VERSION}"], cwd=work,
                                env=env, capture_output=True, text=True, timeout=900, start_new_session=True)
        built = work / "server"
        if result.returncode != 0 or not built.is_file():
            detail = " / ".join(line.strip() for line in (result.stderr or result.stdout).strip().splitlines()[-3:])
            raise RealKafkaUnavailable(f"Go could not build Toxiproxy {TOXIPROXY_VERSION} ({detail}); check that the "
                                       "Go module proxy can be reached (go env GOPROXY)")
        os.replace(built, target)  # atomic: a concurrent run sees the whole binary or none
    finally:
        shutil.rmtree(work, ignore_errors=True)


class ToxiproxyError(RuntimeError):
    """Toxiproxy's API refused a call (the message is its answer)."""


class Toxiproxy:
    """One toxiproxy-server, started by ``start`` as a process of ``procs`` (stopped by pid with them, or by
    ``stop``), its API on ``127.0.0.1:<free port>``."""

    def __init__(self, procs: Processes, binary: Path, output: Path, host: str = "127.0.0.1") -> None:
        self.procs = procs
        self.binary = binary
        self.output = output
        self.host = host
        self.port = 0
        self.proc: Proc | None = None

    def start(self, timeout_s: float = START_TIMEOUT_S) -> None:
        self.port = listen_ports.claim(1, self.host)[0]
        # A fixed seed: the jitter draws of a latency toxic are the same from run to run (Go's math/rand).
        self.proc = self.procs.start("toxiproxy", [str(self.binary), "-host", self.host, "-port", str(self.port),
                                                   "-seed", "1"], self.output)
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                self._call("GET", "/version")
                return
            except (OSError, ToxiproxyError):
                if not self.proc.running():
                    raise ToxiproxyError(f"toxiproxy-server exited with code {self.proc.popen.returncode}: "
                                         f"{_tail(self.output)}") from None
                if time.monotonic() > deadline:
                    raise ToxiproxyError(f"toxiproxy-server did not answer within {timeout_s:.0f} s: "
                                         f"{_tail(self.output)}") from None
                time.sleep(0.05)

    def stop(self) -> None:
        if self.proc is not None:
            self.procs.stop(self.proc, 5.0)
        listen_ports.release([self.port])

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.running()

    # --- the HTTP API (api.go) --------------------------------------------------------------------------

    def _call(self, method: str, path: str, body: dict[str, object] | None = None) -> object:
        """Toxiproxy's answer: parsed JSON, or the text of a non-JSON answer (/version's)."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"http://{self.host}:{self.port}{path}", data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                text = response.read().decode()
        except urllib.error.HTTPError as exc:
            raise ToxiproxyError(f"{method} {path}: {exc.code} {exc.read().decode(errors='replace').strip()}") from None
        return json.loads(text) if text.strip().startswith(("{", "[")) else text

    def add_proxy(self, name: str, upstream: str, listen_host: str = "127.0.0.1", listen_port: int = 0) -> int:
        """A proxy ``name`` listening on ``listen_port`` of ``listen_host`` (0: a port the kernel picks) that
        forwards every connection to ``upstream`` (``host:port``; it need not be up yet: each connection
        connects on its own); its port."""
        answer = self._call("POST", "/proxies", {"name": name, "listen": f"{listen_host}:{listen_port}",
                                                 "upstream": upstream, "enabled": True})
        if not isinstance(answer, dict) or ":" not in str(answer.get("listen")):
            raise ToxiproxyError(f"POST /proxies: no listening address in {answer!r}")
        return int(str(answer["listen"]).rsplit(":", 1)[1])

    def add_latency(self, proxy: str, name: str, stream: Stream, latency_ms: int, jitter_ms: int = 0) -> None:
        """Every chunk on ``stream`` of ``proxy`` is held ``latency_ms`` (+- ``jitter_ms``) after it was read."""
        self._toxic(proxy, name, "latency", stream, {"latency": int(latency_ms), "jitter": int(jitter_ms)})

    def add_reset_peer(self, proxy: str, name: str, stream: Stream = "upstream", timeout_ms: int = 0) -> None:
        """Connections of ``proxy`` are closed ``timeout_ms`` after the first data on ``stream`` (0: at once), while
        the toxic is there. Measured on v2.5.0 (tests/real/test_toxiproxy.py): a connection opened while the toxic
        is there is reset (TCP RST both ways: the client's recv raises ECONNRESET, and so does the server's); a
        connection already open when the toxic is added is closed gracefully instead (the client reads EOF)."""
        self._toxic(proxy, name, "reset_peer", stream, {"timeout": int(timeout_ms)})

    def reset(self, proxy: str) -> None:
        """Close every connection of ``proxy`` now, both sides (the client's and the upstream's), and accept new
        ones again at once: Toxiproxy closes a disabled proxy's connections and listens again, on the same
        address, when it is enabled (proxy.go, ``stop`` / ``start``). Measured on v2.5.0
        (tests/real/test_toxiproxy.py): the client reads EOF, a new connection gets through."""
        self._call("POST", f"/proxies/{proxy}", {"enabled": False})
        self._call("POST", f"/proxies/{proxy}", {"enabled": True})

    def remove_toxic(self, proxy: str, name: str) -> None:
        self._call("DELETE", f"/proxies/{proxy}/toxics/{name}")

    def toxics(self, proxy: str) -> list[dict[str, object]]:
        """The toxics on ``proxy`` as Toxiproxy lists them (name, type, stream, attributes, ...)."""
        answer = self._call("GET", f"/proxies/{proxy}/toxics")
        if not isinstance(answer, list):
            raise ToxiproxyError(f"GET /proxies/{proxy}/toxics: not a list: {answer!r}")
        return [dict(t) for t in answer if isinstance(t, dict)]

    def _toxic(self, proxy: str, name: str, kind: str, stream: Stream, attributes: dict[str, int]) -> None:
        self._call("POST", f"/proxies/{proxy}/toxics",
                   {"name": name, "type": kind, "stream": stream, "toxicity": 1.0, "attributes": attributes})


def _tail(path: Path, lines: int = 3) -> str:
    try:
        text = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "(no output)"
    return " / ".join(text[-lines:]) or "(no output)"
