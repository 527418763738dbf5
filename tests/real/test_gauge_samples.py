"""A real run's gauges (kafkasim.real.jmx): each node's sampler (driver/GaugeReporter.java, inside the node) writes
a file of its own, and the run's timeseries table is all of them, in time order, whatever order the files come in."""

from __future__ import annotations

from pathlib import Path

from kafkasim.real.jmx import read_samples


def test_every_nodes_file_makes_one_table_and_a_line_cut_short_is_left_out(tmp_path: Path) -> None:
    broker = tmp_path / "broker-1.tsv"
    # The first process was killed in the middle of a row; its restart's sampler went on on the next line.
    broker.write_text("0.000\tLeaderCount\tbroker-1\t1.0\n1000.000\tLeaderCount\tbro\n"
                      "3000.000\tLeaderCount\tbroker-1\t0.0\n"
                      "3000.000\tLogEndOffset\t__consumer_offsets-0/replica-1\t4.0\n"
                      "3000.000\tPurgatorySize\tbroker-1/ElectLeader\t0.0\n"
                      "3000.000\tPurgatorySize\tbroker-1/Produce\t2.0\n")
    controller = tmp_path / "controller.tsv"
    controller.write_text("0.000\tOfflinePartitionsCount\tcontroller\t0.0\n"
                          "3000.000\tOfflinePartitionsCount\tcontroller\t1.0\n"
                          "6000.000\tOfflinePartitionsCount\tcontroller\t0.0\n")
    frame = read_samples([controller, broker, tmp_path / "broker-2.tsv"], end_ms=5000.0)
    rows = [(float(t), str(m), str(e), float(v)) for t, m, e, v in
            frame[["time_ms", "metric", "entity", "value"]].itertuples(index=False)]
    assert rows == [
        (0.0, "LeaderCount", "broker-1", 1.0),
        (0.0, "OfflinePartitionsCount", "controller", 0.0),
        (3000.0, "LeaderCount", "broker-1", 0.0),
        (3000.0, "OfflinePartitionsCount", "controller", 1.0),
        (3000.0, "PurgatorySize", "broker-1/Produce", 2.0),
    ]
