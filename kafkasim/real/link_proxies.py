"""A scenario's ``link_delay`` and ``connection_reset`` faults on a real cluster: the targeted traffic routed
through Toxiproxy proxies, a latency toxic on them for each delay's window, and every connection through them
closed at a reset.

Kafka answers a Metadata request with the brokers' addresses *of the listener the request came in on*
(``KafkaApis.handleTopicMetadataRequest``: ``metadataCache.getAliveBrokerNodes(request.context.listenerName)``),
and a replica fetcher connects to its leader at the leader's endpoint for the fetching broker's own
``inter.broker.listener.name`` (``MetadataCache.getAliveBrokerNode(leaderId, interBrokerListenerName)``). So
each proxied target gets a listener of its own on every broker (``PROXIED<k>``), advertised as a proxy's port
that forwards to it:

* a producer or consumer (its links to every broker): its ``bootstrap.servers`` are the proxies of its
  listener, and every broker address it learns after that is one of them too;
* ``broker-<id>`` (a ``cluster:``) or ``follower-<id>`` (without; broker <id>'s fetcher): that broker's
  ``inter.broker.listener.name`` is its listener, so its replica fetchers reach every leader through the
  proxies -- and nothing else does: other brokers' fetchers from it and clients to it keep their direct
  listener, as in kafkasim (``kafkasim.run.faults``: a broker's link faults are its fetchers' paths).

The proxies are there for the whole run (each costs a copy through one more process, well under a
millisecond on loopback); a fault adds a latency toxic with its constant ``extra`` at ``at`` on the
direction(s) it names (``to_broker`` = Toxiproxy's upstream, ``from_broker`` = downstream) and removes it at
its end. What differs from kafkasim: Toxiproxy's latency is whole milliseconds and a chunk the toxic still
holds when it is removed goes at once (kafkasim keeps the delay of a message sent during the window).

A ``connection_reset`` closes every connection of its target's proxies at once (``Toxiproxy.reset``): both
the client's side and the broker's, as kafkasim's reset closes both ends. The client sees its connection
closed (NetworkClient's disconnect: every request in flight fails with a network error and is retried on a
new connection); the broker drops a response it still writes for it. Toxiproxy closes with a FIN where a
peer's kernel sends an RST; Kafka's NetworkClient and SocketServer handle the two alike (the channel is
closed either way).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kafkasim.real import ports as listen_ports
from kafkasim.real.toxiproxy import STREAM_OF_DIRECTION, Toxiproxy
from kafkasim.scenario import Scenario
from kafkasim.scenario.faults import ConnectionResetFault, LinkDelayFault
from kafkasim.sim.distributions import Constant, sampler_from_spec

LISTENER_PREFIX = "PROXIED"


def proxied_targets(scenario: Scenario) -> list[str]:
    """The targets of ``scenario``'s link_delay and connection_reset faults, each once, in the order they first
    appear: the ones whose traffic goes through proxies."""
    targets: list[str] = []
    for fault in scenario.faults:
        if isinstance(fault, LinkDelayFault | ConnectionResetFault) and fault.target not in targets:
            targets.append(fault.target)
    return targets


def constant_extra_ms(fault: LinkDelayFault) -> int | None:
    """The fault's ``extra`` as Toxiproxy's latency (whole milliseconds), None if it cannot be one."""
    sampler = sampler_from_spec(fault.extra)
    if not isinstance(sampler, Constant) or sampler.value != int(sampler.value):
        return None
    return int(sampler.value)


def extra_problem(fault: LinkDelayFault) -> str | None:
    """Why a real cluster cannot delay ``fault``'s link as it asks, if it cannot."""
    sampler = sampler_from_spec(fault.extra)
    if not isinstance(sampler, Constant):
        # Toxiproxy's jitter draws whole milliseconds uniformly from [latency - jitter, latency + jitter - 1]
        # (toxics/latency.go), per chunk read from the socket: no distribution of kafkasim's is that.
        return (f"extra is a {getattr(fault.extra, 'type', 'random')} distribution; Toxiproxy's latency toxic "
                "adds a constant (its jitter is a whole-millisecond uniform draw per socket read, not this "
                "distribution): give extra a constant, or run the simulation")
    if sampler.value != int(sampler.value):
        return (f"extra {sampler.value:g} ms is not a whole number of milliseconds, which is all Toxiproxy's latency "
                "toxic takes; round it, or run the simulation")
    return None


@dataclass
class ProxiedListener:
    """One proxied target's listener: its port on each broker and the proxy in front of each."""

    name: str
    target: str
    ports: dict[int, int]
    proxy_ports: dict[int, int] = field(default_factory=dict)

    def proxy(self, broker: int) -> str:
        return f"{self.name.lower()}-broker-{broker}"


class LinkProxies:
    """The proxies of every proxied target of a run (on ``toxiproxy``, started) and their toxics."""

    def __init__(self, toxiproxy: Toxiproxy, scenario: Scenario, broker_ids: list[int], host: str = "127.0.0.1"):
        self.toxiproxy = toxiproxy
        self.host = host
        targets = proxied_targets(scenario)
        # Every listener and proxy port outside the ephemeral range (kafkasim.real.ports): a reset re-binds the
        # proxy's port at once, and a connection elsewhere must not have taken it meanwhile.
        n = len(targets) * len(broker_ids)
        self.ports = listen_ports.claim(2 * n, host)
        ports, proxy_ports = self.ports[:n], self.ports[n:]
        self.listeners: dict[str, ProxiedListener] = {}
        for k, target in enumerate(targets):
            own = slice(k * len(broker_ids), (k + 1) * len(broker_ids))
            listener = ProxiedListener(f"{LISTENER_PREFIX}{k}", target, dict(zip(broker_ids, ports[own], strict=True)))
            for b, proxy_port in zip(broker_ids, proxy_ports[own], strict=True):
                listener.proxy_ports[b] = toxiproxy.add_proxy(listener.proxy(b), f"{host}:{listener.ports[b]}", host,
                                                              proxy_port)
            self.listeners[target] = listener
        self._broker_target: dict[int, str] = {}
        for target in targets:
            kind = scenario.target_kind(target)
            if kind in ("broker", "follower"):
                self._broker_target[int(target.rsplit("-", 1)[1])] = target

    def extra_listeners(self) -> dict[int, list[tuple[str, int, int]]]:
        """Per broker: (listener name, port it listens on, port it advertises: the proxy's)."""
        out: dict[int, list[tuple[str, int, int]]] = {}
        for listener in self.listeners.values():
            for b, port in listener.ports.items():
                out.setdefault(b, []).append((listener.name, port, listener.proxy_ports[b]))
        return out

    def inter_broker_listeners(self) -> dict[int, str]:
        """The brokers whose replica fetchers go through proxies, and the listener they fetch on."""
        return {b: self.listeners[target].name for b, target in self._broker_target.items()}

    def bootstrap(self, client: str) -> str | None:
        """A proxied client's bootstrap servers (the proxies of its listener), None for one not proxied."""
        listener = self.listeners.get(client)
        if listener is None:
            return None
        return ",".join(f"{self.host}:{port}" for port in listener.proxy_ports.values())

    def delay_on(self, index: int, fault: LinkDelayFault) -> None:
        """Fault ``index``'s latency on every proxy of its target, in its direction(s)."""
        extra = constant_extra_ms(fault)
        assert extra is not None, fault  # refused before the run otherwise (config_map.refusals)
        listener = self.listeners[fault.target]
        for b in listener.ports:
            for stream in STREAM_OF_DIRECTION[fault.direction]:
                self.toxiproxy.add_latency(listener.proxy(b), _toxic(index, stream), stream, extra)

    def delay_off(self, index: int, fault: LinkDelayFault) -> None:
        listener = self.listeners[fault.target]
        for b in listener.ports:
            for stream in STREAM_OF_DIRECTION[fault.direction]:
                self.toxiproxy.remove_toxic(listener.proxy(b), _toxic(index, stream))

    def reset(self, fault: ConnectionResetFault) -> None:
        """Close every connection through the proxies of ``fault``'s target, at once (the reset's instant)."""
        listener = self.listeners[fault.target]
        for b in listener.ports:
            self.toxiproxy.reset(listener.proxy(b))

    def release(self) -> None:
        """Give up the listeners' and proxies' ports (the run's processes are stopped)."""
        listen_ports.release(self.ports)

    def describe(self) -> Mapping[str, Mapping[str, object]]:
        """What run-info.json says of the proxies: per target, its listener and each broker's proxy port."""
        return {target: {"listener": listener.name,
                         "proxy_ports": {f"broker-{b}": port for b, port in listener.proxy_ports.items()}}
                for target, listener in self.listeners.items()}


def _toxic(index: int, stream: str) -> str:
    return f"faults-{index}-{stream}"
