"""Replication across many partitions, aggregated: what `log_offsets` and `isr_size` draw when a run has
more partitions than one figure can show one by one (`kafkasim plot --per-partition` draws them each).

* Offsets: per partition, the leader's uncommitted tail (its LogEndOffset − HighWatermark: written, not
  yet acknowledged to acks=all nor visible to consumers), and per follower replica its lag behind the
  leader (leader LEO − follower LEO), each as min / median / max across partitions (replicas) at every
  sample. A partition's HW is the minimum LEO over its ISR (Kafka's `Partition.maybeIncrementLeaderHW`),
  so the slowest follower's lag bounds the tail.
* ISR: how many partitions have each ISR size, how many are under min.insync.replicas, how many have eligible
  leader replicas (the controller's ElrSize, KIP-966) and how many no leader, over time.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from kafkasim.report.frames import metric
from kafkasim.report.palette import ELR_COLOUR, MIN_ISR_COLOUR, OFFLINE_COLOUR, replica_colour
from kafkasim.report.replica_presence import REPLICA_SEPARATOR
from kafkasim.report.time_axis import TimeUnit

DOWN_COLOUR = "#7f7f7f"



def _replica_rows(leo: pd.DataFrame) -> pd.DataFrame:
    """LogEndOffset rows split into (time_ms, partition, broker, value)."""
    parts = leo["entity"].str.rsplit(REPLICA_SEPARATOR, n=1, expand=True)
    if parts.shape[1] < 2:
        return pd.DataFrame(columns=["time_ms", "partition", "broker", "value"])
    frame = pd.DataFrame({"time_ms": leo["time_ms"].to_numpy(float), "partition": parts[0].to_numpy(),
                          "broker": pd.to_numeric(parts[1], errors="coerce").to_numpy(),
                          "value": leo["value"].to_numpy(float)})
    return frame.dropna(subset=["broker"])


def _held(replicas: pd.DataFrame) -> pd.DataFrame:
    """Every replica at every LogEndOffset sample time from its first sample on, its last value held where it
    reported nothing (its broker was down: a crashed broker's log ends at its last offset), with ``down``
    True on those held rows."""
    if replicas.empty:
        return replicas.assign(down=pd.Series(dtype=bool))
    wide = replicas.pivot_table(index="time_ms", columns=["partition", "broker"], values="value", aggfunc="last")
    reported = wide.notna()
    held = wide.ffill()
    values = held.stack(["partition", "broker"], future_stack=True)
    long = pd.DataFrame({"value": values.to_numpy(float)}, index=values.index).reset_index()
    down = (~reported).stack(["partition", "broker"], future_stack=True).to_numpy()
    long = long.assign(down=down)
    return long.dropna(subset=["value"])


def offset_spreads(frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(uncommitted, follower lag): each a frame indexed by time_ms with columns min, median, max and
    count -- the spread across partitions of leader LEO − HW, and across follower replicas of leader LEO −
    follower LEO. The leader is the partition's `LeaderId` gauge (broker 0 for results without it). A
    follower whose broker is down stays in the lag with its last offset held, so its lag grows while it is
    down (column ``down``: how many such replicas at each time) instead of dropping out of the spread."""
    replicas = _held(_replica_rows(metric(frame, "LogEndOffset")))
    leader_ids = metric(frame, "LeaderId")
    if leader_ids.empty:
        leaders = replicas[["time_ms", "partition"]].drop_duplicates().assign(leader=0.0)
    else:
        leaders = pd.DataFrame({"time_ms": leader_ids["time_ms"].to_numpy(float),
                                "partition": leader_ids["entity"].to_numpy(),
                                "leader": leader_ids["value"].to_numpy(float)})
    with_leader = replicas.merge(leaders, on=["time_ms", "partition"], how="inner")
    is_leader = with_leader["broker"] == with_leader["leader"]
    # Only a leader that is up has a log end offset to lag behind or to commit up to.
    leader_leo = with_leader[is_leader & ~with_leader["down"]][["time_ms", "partition", "value"]].rename(
        columns={"value": "leader_leo"})
    followers = with_leader[~is_leader].merge(leader_leo, on=["time_ms", "partition"], how="inner")
    lag = followers.assign(spread=followers["leader_leo"] - followers["value"])
    hw_rows = metric(frame, "HighWatermark")
    hw = pd.DataFrame({"time_ms": hw_rows["time_ms"].to_numpy(float), "partition": hw_rows["entity"].to_numpy(),
                       "hw": hw_rows["value"].to_numpy(float)})
    tail = leader_leo.merge(hw, on=["time_ms", "partition"], how="inner")
    tail = tail.assign(spread=tail["leader_leo"] - tail["hw"], down=False)
    return _spread(tail), _spread(lag)


def _spread(rows: pd.DataFrame) -> pd.DataFrame:
    if rows.empty:
        return pd.DataFrame(columns=["min", "median", "max", "count", "down"])
    grouped = rows.groupby("time_ms")
    spread = grouped["spread"]
    return pd.DataFrame({"min": spread.min(), "median": spread.median(), "max": spread.max(),
                         "count": spread.size(), "down": grouped["down"].sum()}).sort_index()


def draw_spread(ax: Axes, spread: pd.DataFrame, unit: TimeUnit, until_ms: float, colour: str, what: str) -> None:
    """Median as a step line over a min–max band, each value holding until the next sample."""
    times = spread.index.to_numpy(float)
    if times.size == 0:
        ax.text(0.5, 0.5, f"no {what} samples", ha="center", va="center", transform=ax.transAxes)
        return
    low, mid, high = (spread[c].to_numpy(float) for c in ("min", "median", "max"))
    if times[-1] < until_ms:
        times = np.append(times, until_ms)
        low, mid, high = np.append(low, low[-1]), np.append(mid, mid[-1]), np.append(high, high[-1])
    x = times / unit.per_ms
    n = int(spread["count"].max())
    ax.fill_between(x, low, high, step="post", color=colour, alpha=0.25, lw=0, label=f"min\u2013max of {n} {what}")
    ax.step(x, mid, where="post", color=colour, lw=1.6, label=f"median of {n} {what}")
    down = spread["down"].to_numpy(float) if "down" in spread else np.zeros(len(spread))
    if down.max(initial=0.0) > 0:
        # Replicas on a down broker stay in the spread with their last offset: mark when, and how many.
        held = np.append(down, down[-1]) if x.size > down.size else down
        ax.fill_between(x, 0, 1, where=held > 0, step="post", color=DOWN_COLOUR, alpha=0.12, lw=0,
                        transform=ax.get_xaxis_transform(),
                        label=f"up to {int(down.max())} {what} on a down broker (last offset held)")


def isr_counts(frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.Series]:
    """(partitions per ISR size: time_ms x size, under min ISR: partitions per time) from the IsrSize and
    UnderMinIsr gauges."""
    isr = metric(frame, "IsrSize")
    counts = (isr.groupby(["time_ms", "value"]).size().unstack(fill_value=0).sort_index()
              if not isr.empty else pd.DataFrame())
    under = metric(frame, "UnderMinIsr")
    under_count = under.groupby("time_ms")["value"].sum().sort_index() if not under.empty else pd.Series(dtype=float)
    return counts, under_count


def offline_counts(frame: pd.DataFrame) -> pd.Series:
    """Partitions without a leader per time, from the controller's OfflinePartitionsCount gauge (empty for
    results without it: written by an older kafkasim, or a real run)."""
    offline = metric(frame, "OfflinePartitionsCount")
    return offline.groupby("time_ms")["value"].sum().sort_index() if not offline.empty else pd.Series(dtype=float)


def elr_counts(frame: pd.DataFrame) -> pd.Series:
    """Partitions with eligible leader replicas per partition-sample time. ElrSize is written only while a
    partition has some, and once more (0) when they are gone, so each partition's last value holds until its
    next row; the sample times are those of IsrSize (empty: no ELR in the run)."""
    elr = metric(frame, "ElrSize")
    if elr.empty:
        return pd.Series(dtype=float)
    times = np.union1d(metric(frame, "IsrSize")["time_ms"].to_numpy(float), elr["time_ms"].to_numpy(float))
    held = (elr.pivot_table(index="time_ms", columns="entity", values="value", aggfunc="last")
            .reindex(times).ffill().fillna(0.0))
    return (held > 0).sum(axis=1).astype(float)


def draw_isr_counts(ax: Axes, counts: pd.DataFrame, under: pd.Series, unit: TimeUnit, until_ms: float,
                    offline: pd.Series | None = None, elr: pd.Series | None = None) -> None:
    def step(times: np.ndarray, values: np.ndarray, **style: object) -> None:
        if times.size and times[-1] < until_ms:
            times, values = np.append(times, until_ms), np.append(values, values[-1])
        ax.step(times / unit.per_ms, values, where="post", **style)  # type: ignore[arg-type]

    times = counts.index.to_numpy(float)
    for index, size in enumerate(sorted(counts.columns, reverse=True)):
        step(times, counts[size].to_numpy(float), color=replica_colour(index), lw=1.8,
             label=f"ISR size {int(size)}")
    if len(under) and float(under.max()) > 0:
        step(under.index.to_numpy(float), under.to_numpy(float), color=MIN_ISR_COLOUR, lw=1.4, ls=(0, (6, 3)),
             label="under min.insync.replicas")
    if offline is not None and len(offline) and float(offline.max()) > 0:
        # No leader: nobody can produce to or fetch from them (Kafka's OfflinePartitionsCount).
        step(offline.index.to_numpy(float), offline.to_numpy(float), color=OFFLINE_COLOUR, lw=2.2,
             label="offline: no leader (OfflinePartitionsCount)")
    if elr is not None and len(elr) and float(elr.max()) > 0:
        # Below min.insync.replicas, replicas that left the ISR stay eligible to lead (PartitionChangeBuilder).
        step(elr.index.to_numpy(float), elr.to_numpy(float), color=ELR_COLOUR, lw=1.8, ls=(0, (1, 1.5)),
             label="with eligible leader replicas (ElrSize > 0)")
