"""A network of its own for a real run with network faults: every host in its own Linux network namespace,
joined through a router namespace, so that the link between any two hosts can be cut on its own.

Hosts are the run's machines as a scenario names them: ``controller``, ``broker-<id>``, ``clients`` (the load
driver's JVM: every producer and consumer) and ``observer`` (the final log audit, never
cut). Host ``i`` gets namespace ``kafkasim-<pid>-<i>`` with one veth (``eth0``, address ``10.29.0.<i+1>/32``)
whose other end (``h<i>``) is in the router's namespace; the router forwards between them (its own
``ip_forward``, the machine's is untouched) with a /32 route per host. Nothing is created in the machine's
own namespace: deleting the namespaces removes the veths with them.

A cut of the direction ``a -> b`` is one policy rule in the router, ``ip rule add from A to B blackhole``: the
router drops those packets silently (a FIB rule's blackhole action makes ``ip_error`` discard the packet
without an ICMP answer), like a pulled cable and as kafkasim's ``network_partition`` means it: no RST, the
sender's TCP retransmits, a connection survives a short cut, a new connect's SYNs are lost until the
connection set-up times out. (Run as an experiment here: a TCP sender kept writing through a 3 s cut without
an error, the receiver got everything once the rule was gone; a connect during the cut timed out, it was not
refused.) A link set down would instead answer the sender's new connects with an error at once. Cuts of the
same direction nest (a count per direction: the rule goes when the last cut of it heals).

``ip netns exec NS argv`` execs ``argv`` in the namespace (no fork), so a process started through it keeps
its pid and process group: ``kafkasim.real.processes`` stops it by pid as any other.

Everything is removed when the ``with`` block ends, normally, by an exception or by Ctrl-C; namespaces a
killed earlier run left behind (named after a process that is gone) are removed when the next one starts.
Without root, or without iproute2's ``ip``, ``unavailable_reason`` says why in one line (the fault is refused
before the run).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

PREFIX = "kafkasim-"
ROUTER_ADDRESS = "10.29.255.254"
"""The router's address on every veth of its namespace (each host's gateway)."""
HOST_ADDRESS = "10.29.0.{}"
MAX_HOSTS = 150
"""At most this many hosts: every direction gets its own rule priority below the main table's (32766)."""
IP_TIMEOUT_S = 30.0
_OURS = re.compile(rf"^{PREFIX}(\d+)-(\w+)$")


class NetworkError(RuntimeError):
    """An ``ip`` command failed (the message says which and why)."""


def unavailable_reason() -> str | None:
    """Why network namespaces cannot be made here (one line), or None."""
    if os.geteuid() != 0:
        return "network faults on a real cluster need root (each host gets its own network namespace)"
    if shutil.which("ip") is None:
        return "network faults on a real cluster need iproute2's `ip` command (apt-get install iproute2)"
    if not Path("/proc/self/ns/net").exists():
        return "network faults on a real cluster need a kernel with network namespaces"
    return None


def _ip(*args: str, check: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(["ip", *args], input=stdin, capture_output=True, text=True, timeout=IP_TIMEOUT_S)
    if check and result.returncode != 0:
        given = f" ({stdin.strip()!r} on its input)" if stdin else ""
        raise NetworkError(f"`ip {' '.join(args)}`{given} failed: {result.stderr.strip() or result.stdout.strip()}")
    return result


def namespaces() -> list[str]:
    """The names of the machine's network namespaces (``ip netns list``; none without ``ip``)."""
    if shutil.which("ip") is None:
        return []
    out = _ip("netns", "list", check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def ours(pid: int | None = None) -> list[str]:
    """The namespaces kafkasim made (those of the run in process ``pid``, if given)."""
    found = []
    for name in namespaces():
        m = _OURS.match(name)
        if m is not None and (pid is None or int(m.group(1)) == pid):
            found.append(name)
    return found


def remove_stale() -> list[str]:
    """Remove the namespaces of earlier runs whose process is gone (a run killed with SIGKILL); their names."""
    removed = []
    for name in ours():
        m = _OURS.match(name)
        if m is not None and not Path(f"/proc/{m.group(1)}").exists():
            _ip("netns", "delete", name, check=False)
            removed.append(name)
    return removed


class HostNetwork:
    """The hosts ``hosts`` (names), each in its own namespace behind one router; a context manager that
    removes it all on exit."""

    def __init__(self, hosts: Sequence[str]) -> None:
        if len(set(hosts)) != len(hosts) or len(hosts) > MAX_HOSTS:
            raise ValueError(f"hosts must be distinct, at most {MAX_HOSTS}: {list(hosts)}")
        self.hosts = list(hosts)
        pid = os.getpid()
        self.router = f"{PREFIX}{pid}-router"
        self.namespace = {h: f"{PREFIX}{pid}-{i}" for i, h in enumerate(self.hosts)}
        self.address = {h: HOST_ADDRESS.format(i + 1) for i, h in enumerate(self.hosts)}
        self._cuts: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()  # the fault schedule's threads cut and heal
        self._created: list[str] = []

    def __enter__(self) -> HostNetwork:
        try:
            self.create()
        except BaseException:
            self.remove()
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.remove()

    def create(self) -> None:
        remove_stale()
        self._namespace(self.router)
        # Forwarding in the router's namespace only (a new namespace starts with it off).
        _ip("netns", "exec", self.router, "sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward")
        for i, host in enumerate(self.hosts):
            ns, address, peer = self.namespace[host], self.address[host], f"h{i}"
            self._namespace(ns)
            _ip("link", "add", "eth0", "netns", ns, "type", "veth", "peer", "name", peer, "netns", self.router)
            _ip("-n", ns, "addr", "add", f"{address}/32", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            _ip("-n", ns, "route", "add", ROUTER_ADDRESS, "dev", "eth0")
            _ip("-n", ns, "route", "add", "default", "via", ROUTER_ADDRESS, "dev", "eth0")
            _ip("-n", self.router, "addr", "add", f"{ROUTER_ADDRESS}/32", "dev", peer)
            _ip("-n", self.router, "link", "set", peer, "up")
            _ip("-n", self.router, "route", "add", f"{address}/32", "dev", peer)

    def _namespace(self, name: str) -> None:
        _ip("netns", "add", name)
        self._created.append(name)
        _ip("-n", name, "link", "set", "lo", "up")

    def remove(self) -> None:
        """Delete every namespace this network made (their veths go with them); what could not be deleted
        raises once the others are gone."""
        failed = []
        for name in reversed(self._created):
            result = _ip("netns", "delete", name, check=False)
            if result.returncode != 0 and name in namespaces():
                failed.append(f"{name}: {result.stderr.strip()}")
        self._created.clear()
        self._cuts.clear()
        if failed:
            raise NetworkError("could not delete network namespace(s) " + "; ".join(failed))

    def exec_prefix(self, host: str) -> list[str]:
        """The argv prefix that runs a command on ``host`` (``ip netns exec NS``: it execs, the pid stays)."""
        return ["ip", "netns", "exec", self.namespace[host]]

    # --- cuts -----------------------------------------------------------------------------------------

    def cut(self, source: str, destination: str) -> None:
        """Drop every packet from ``source`` to ``destination`` (one direction), silently."""
        self.cut_each([(source, destination)])

    def heal(self, source: str, destination: str) -> None:
        """End one cut of ``source -> destination``; the link carries packets again when its last cut ends."""
        self.heal_each([(source, destination)])

    def cut_each(self, pairs: Sequence[tuple[str, str]]) -> None:
        """Cut every direction of ``pairs`` at once: one ``ip -batch`` in the router, so that a fault's links
        go down together (one ``ip`` process per direction took tens of ms each on a loaded machine, and a
        100 ms outage of six directions was half over before its last one was cut)."""
        with self._lock:
            added = []
            for key in pairs:
                self._cuts[key] = self._cuts.get(key, 0) + 1
                if self._cuts[key] == 1:
                    added.append(key)
            self._batch([f"rule add {' '.join(self._selector(k))} blackhole pref {self._pref(k)}" for k in added])

    def heal_each(self, pairs: Sequence[tuple[str, str]]) -> None:
        """End one cut of every direction of ``pairs``, at once (one ``ip -batch``)."""
        with self._lock:
            removed = []
            for key in pairs:
                count = self._cuts.get(key, 0)
                if count == 1:
                    removed.append(key)
                if count <= 1:
                    self._cuts.pop(key, None)
                else:
                    self._cuts[key] = count - 1
            self._batch([f"rule del {' '.join(self._selector(k))} blackhole pref {self._pref(k)}" for k in removed])

    def _batch(self, commands: list[str]) -> None:
        if commands:
            _ip("-n", self.router, "-batch", "-", stdin="\n".join(commands) + "\n")

    def heal_all(self) -> None:
        """End every cut (the run is over)."""
        with self._lock:
            keys = list(self._cuts)
            for key in keys:
                self._cuts[key] = 1
        self.heal_each(keys)

    @property
    def cuts(self) -> list[tuple[str, str]]:
        """The directions cut now."""
        return sorted(self._cuts)

    def _selector(self, key: tuple[str, str]) -> list[str]:
        return ["from", self.address[key[0]], "to", self.address[key[1]]]

    def _pref(self, key: tuple[str, str]) -> int:
        # One priority per direction, below the main table's 32766.
        return 1000 + self.hosts.index(key[0]) * MAX_HOSTS + self.hosts.index(key[1])
