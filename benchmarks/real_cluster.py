"""What a real Kafka cluster costs on this machine (`kafkasim run --on-kafka`): set-up and memory.

    uv run python benchmarks/real_cluster.py               # cached jars: locate, cluster start, RSS
    uv run python benchmarks/real_cluster.py --first-fetch # also a first fetch into empty caches

* set-up: ``kafka_libs.locate`` with the jars cached (a `java -version` and a directory check), and with
  ``--first-fetch`` a fetch into an empty kafkasim cache and an empty Maven repository (``MAVEN_OPTS`` sets
  ``maven.repo.local``), which downloads the ~92 jars and Maven's own plugins from Maven Central;
* cluster start: one KRaft controller and three brokers, from formatting the storage to every broker's
  ``Kafka Server started``;
* memory: the resident set of each JVM once started, and after 10 s of quickstart-like load (acks=all,
  200 records/s, RF 3) driven by the load driver.

Prints one table; the machine's 1-minute load average is printed too (the figures depend on it).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from kafkasim import load_scenario
from kafkasim.real.cluster import RealCluster
from kafkasim.real.kafka_libs import locate
from kafkasim.real.processes import Processes, rss_bytes
from kafkasim.real.runner import run_on_kafka
from kafkasim.scenario import with_overrides

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--first-fetch", action="store_true", help="also time a fetch into empty caches")
    args = parser.parse_args()
    rows: list[tuple[str, str]] = []
    if args.first_fetch:
        scratch = Path(tempfile.mkdtemp(prefix="kafkasim-fetch-bench-"))
        saved = {k: os.environ.get(k) for k in ("XDG_CACHE_HOME", "MAVEN_OPTS")}
        os.environ["XDG_CACHE_HOME"] = str(scratch / "cache")
        os.environ["MAVEN_OPTS"] = f"-Dmaven.repo.local={scratch / 'm2'}"
        started = time.monotonic()
        fetched = locate(progress=lambda _line: None)
        rows.append(("first fetch (empty kafkasim cache, empty Maven repository)",
                     f"{time.monotonic() - started:.1f} s, {len(list(fetched.libs.glob('*.jar')))} jars"))
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(scratch, ignore_errors=True)
    started = time.monotonic()
    libs = locate()
    rows.append(("set-up with the jars cached (locate: Java check, cache check)", f"{time.monotonic() - started:.2f} s"))
    props = {"offsets.topic.replication.factor": "3", "transaction.state.log.replication.factor": "3",
             "transaction.state.log.min.isr": "2"}
    with tempfile.TemporaryDirectory(prefix="kafkasim-bench-") as work, Processes() as procs:
        cluster = RealCluster(libs, Path(work), procs, {b: dict(props) for b in range(3)}, {})
        seconds = cluster.start()
        rows.append(("cluster start (1 controller + 3 brokers, format to ready)", f"{seconds:.1f} s"))
        time.sleep(2.0)
        for node in cluster.nodes:
            assert node.proc is not None
            rss = rss_bytes(node.proc.pid) or 0
            rows.append((f"RSS of {node.name}, idle after start", f"{rss / 2**20:.0f} MiB"))
        cluster.stop()
    scenario = with_overrides(load_scenario(ROOT / "scenarios/quickstart.yaml"),
        ["duration=10s", "producers[0].rate=200/s"])
    result = run_on_kafka(scenario, libs=libs)
    for name, rss in sorted(result.run_info["rss_bytes"].items()):
        rows.append((f"RSS of {name} under load (quickstart at 200 records/s)", f"{rss / 2**20:.0f} MiB"))
    rows.append(("the whole --on-kafka run of a 10 s scenario (wall)", f"{result.run_info['wall_seconds']:.0f} s"))
    load = os.getloadavg()[0]
    width = max(len(r[0]) for r in rows)
    print(f"1-minute load average at the end: {load:.1f}")
    for what, value in rows:
        print(f"{what:<{width}}  {value}")


if __name__ == "__main__":
    main()
