"""A fitted preset: the file `kafkasim calibrate` writes and `kafkasim run --preset FILE` runs with.

It is YAML a person can read: when and from what it was fitted (the result directory, the Kafka version
and the machine that ran it), each parameter's value with its uncertainty and what determined it, the
fit's quality statistic by statistic, and the covariance of the parameters' logs (for a prediction's band).
Applied to a scenario, its values go where the scenario leaves a value out: what the scenario writes wins,
as with a hardware preset (kafkasim.scenario.hardware).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from kafkasim.calibrate.collector import Collector, CollectorError, from_json
from kafkasim.calibrate.parameters import BY_NAME, PARAMETERS, WAS, overrides
from kafkasim.scenario import Scenario, with_overrides

if TYPE_CHECKING:  # the fit (scipy, the engine) takes seconds to import; reading a preset needs none of it
    from kafkasim.calibrate.fit import Fit

KIND = "kafkasim fitted preset"
HEADER = "# A kafkasim fitted preset, written by `kafkasim calibrate`."


class PresetError(Exception):
    """A preset file kafkasim cannot use: the message names the file, the key and what is wrong."""


@dataclass(frozen=True)
class Preset:
    path: str
    values: dict[str, float]
    covariance: list[list[float]]
    """Of the parameters' natural logs, in PARAMETERS' order; all zeros when the file gives none."""
    fitted: dict[str, Any]
    collector: Collector | None = None
    """The leader's collector (and the followers', when they paused enough) measured from the runs' GC logs
    (kafkasim.calibrate.collector); None in a preset fitted without them: its brokers stall by the machine's
    stalls alone."""


def write_preset(path: Path, document: dict[str, Any]) -> None:
    text = HEADER + "\n" + yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=120)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def is_preset_file(path: Path) -> bool:
    try:
        with path.open(encoding="utf-8") as f:
            return f.readline().rstrip("\n") == HEADER
    except (OSError, UnicodeDecodeError):
        return False


def _preset_data(p: Path) -> dict[str, Any]:
    """The preset file's YAML mapping, or PresetError if it cannot be read or is no preset kafkasim wrote."""
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PresetError(f"{p}: cannot read the preset: {exc.strerror or exc}") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise PresetError(f"{p}: not a YAML file: {' '.join(str(exc).split())}") from None
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise PresetError(f"{p}: kind: not a fitted preset (a file `kafkasim calibrate` wrote has `kind: {KIND}`)")
    return data


def load_preset(path: str | Path) -> Preset:
    """The preset at `path`, or PresetError saying what is wrong."""
    p = Path(path)
    data = _preset_data(p)
    params = data.get("parameters")
    if not isinstance(params, dict):
        raise PresetError(f"{p}: parameters: missing (a mapping of {', '.join(BY_NAME)})")
    values: dict[str, float] = {}
    inherited = [name for name in BY_NAME if _stored_as(params, name) != name]
    for name, parameter in BY_NAME.items():
        entry = params.get(_stored_as(params, name))
        if entry is None:
            # A preset kafkasim wrote before the parameter existed, one that is no other's old value (WAS): its
            # fit never saw that cost, so no value stands in for it (0 would be a silently changed model).
            raise PresetError(f"{p}: parameters.{name}: missing: the preset was fitted before kafkasim had "
                              f"this parameter ({parameter.unit}, {parameter.low:g}..{parameter.high:g}); fit "
                              "it again with `kafkasim calibrate RESULT --out FILE` (docs/make_calibration.py "
                              "--start FILE starts the fit from its other values)")
        value = entry.get("value") if isinstance(entry, dict) else None
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise PresetError(f"{p}: parameters.{name}.value: missing or not a number (allowed: "
                              f"{parameter.low:g}..{parameter.high:g} {parameter.unit})")
        if not parameter.low <= value <= parameter.high:
            raise PresetError(f"{p}: parameters.{name}.value: {value:g} is out of range (allowed: "
                              f"{parameter.low:g}..{parameter.high:g} {parameter.unit})")
        values[name] = float(value)
    unknown = sorted(set(params) - set(BY_NAME))
    if unknown:
        raise PresetError(f"{p}: parameters: unknown {', '.join(unknown)} (allowed: {', '.join(BY_NAME)})")
    n = len(PARAMETERS) - len(inherited)
    cov = data.get("covariance")
    if cov is None:
        covariance = [[0.0] * n for _ in range(n)]
    elif (isinstance(cov, list) and len(cov) == n and all(isinstance(r, list) and len(r) == n for r in cov)
          and all(isinstance(x, int | float) and not isinstance(x, bool) for r in cov for x in r)):
        covariance = [[float(x) for x in r] for r in cov]
    else:
        raise PresetError(f"{p}: covariance: must be {n} rows of {n} numbers (the parameters' order)")
    if inherited:
        covariance = _with_inherited(covariance, inherited)
    fitted = data.get("fitted")
    block = data.get("collector")
    collector = None
    if block is not None:
        if not isinstance(block, dict):
            raise PresetError(f"{p}: collector: not a mapping (every_requests, pause_median_ms, pause_p99_ms, "
                              "pauses, requests, runs, and optionally follower)")
        try:
            collector = from_json(block)
        except CollectorError as exc:
            raise PresetError(f"{p}: collector.{exc}") from None
    return Preset(str(p), values, covariance, fitted if isinstance(fitted, dict) else {}, collector)


def _stored_as(params: Mapping[str, object], name: str) -> str:
    """The entry of a preset's `parameters` that holds `name`'s value: its own, or in a preset written before it
    stood for what another parameter was (`WAS`), that one's (the old model's exactly)."""
    was = WAS.get(name)
    return was if was is not None and name not in params and was in params else name


def _with_inherited(covariance: list[list[float]], inherited: list[str]) -> list[list[float]]:
    """A covariance over the parameters but `inherited` (the order of the kafkasim that wrote it) over all of them,
    each inherited one as its `WAS` is: the same variance and the same covariances, and wholly correlated with it,
    so a draw of the fitted values gives both the same value (to rounding), as the old model drew one for both."""
    stored = [p.name for p in PARAMETERS if p.name not in inherited]
    source = {name: stored.index(WAS[name] if name in inherited else name) for name in BY_NAME}
    return [[covariance[source[a]][source[b]] for b in BY_NAME] for a in BY_NAME]


def earlier_fit(path: str | Path) -> tuple[dict[str, float], str]:
    """The values a preset kafkasim wrote holds for today's parameters, for a refit to start from, and when it
    was fitted: one written before a parameter existed lacks it (the fit then starts that one from its first
    guess, or from the one it was before, `WAS`), so unlike `load_preset` a missing parameter is no error.
    PresetError if the file is no preset."""
    p = Path(path)
    data = _preset_data(p)
    params = data.get("parameters")
    values: dict[str, float] = {}
    for name, parameter in BY_NAME.items():
        entry = params.get(_stored_as(params, name)) if isinstance(params, dict) else None
        value = entry.get("value") if isinstance(entry, dict) else None
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
            values[name] = parameter.clipped(float(value))
    fitted = data.get("fitted")
    when = fitted.get("when") if isinstance(fitted, dict) else None
    return values, str(when) if when is not None else "at an unknown time"


_TOKEN = re.compile(r"([^.\[\]]+)|\[([0-9]+)\]")


def _is_set(data: Any, key_path: str) -> bool:
    node = data
    for name, index in _TOKEN.findall(key_path):
        if index:
            if not isinstance(node, list) or int(index) >= len(node):
                return False
            node = node[int(index)]
        else:
            if not isinstance(node, dict) or name not in node:
                return False
            node = node[name]
    return True


def applied(scenario: Scenario, values: dict[str, float],
            collector: Collector | None = None) -> tuple[Scenario, list[str]]:
    """`scenario` with the parameter values (and a preset's measured `collector`) where it leaves them out; and the
    scenario keys it writes itself, which keep the scenario's value."""
    written = scenario.model_dump(mode="json", by_alias=True, exclude_unset=True)
    lines = overrides(values, scenario, collector)
    # A default link latency the scenario writes is every link's that does not write its own: the preset's
    # per-link latencies would override it, so they are kept out too.
    default_written = _is_set(written, "network.default_link.latency")
    kept = [line.partition("=")[0] for line in lines if _is_set(written, line.partition("=")[0])
            or (default_written and line.partition("=")[0].endswith(".link.latency"))]
    wanted = [line for line in lines if line.partition("=")[0] not in kept]
    return (with_overrides(scenario, wanted) if wanted else scenario), kept


def with_collector(scenario: Scenario, collector: Collector | None) -> Scenario:
    """`scenario` with the measured `collector`'s broker stalls, as a fit runs it, unless it writes `broker.stalls`
    itself (which wins, as in `applied`)."""
    written = scenario.model_dump(mode="json", by_alias=True, exclude_unset=True)
    if collector is None or _is_set(written, "broker.stalls"):
        return scenario
    return with_overrides(scenario, [f"broker.stalls={collector.stalls()}"])


def document(fit_result: Fit, *, source: str, scenario: Scenario, run_info: dict[str, Any], when: str,
             machine: str, machine_cpu: Sequence[Mapping[str, float] | None] | None = None,
             collector: Collector | None = None) -> dict[str, Any]:
    """The preset file's content for a fit of the run in `source`. `machine_cpu`: each measured run's
    run-info.json `machine_cpu` (kafkasim.real.machine_cpu; None for a run without it), kept when one has it.
    `collector`: the leader's collector measured from the runs' GC logs, which the fit ran with."""
    f = fit_result
    # run-info.json: a real run's says `engine: kafka` and its version; a simulated run's has neither.
    kafka = run_info.get("kafka_version") if isinstance(run_info.get("kafka_version"), str) else None
    if kafka is not None:
        measured_by = f"Apache Kafka {kafka}"
    elif "kafkasim_version" in run_info:
        measured_by = f"kafkasim {run_info['kafkasim_version']} (a simulated run)"
    else:
        measured_by = "unknown (no run-info.json)"
    parameters: dict[str, Any] = {}
    for p in PARAMETERS:
        sd = f.sd_log[p.name]
        parameters[p.name] = {
            # Every bit of the fit's value: a run of the preset is then the fitted run itself (its `set` lines).
            # Rounded to six digits it was not -- a sixth digit's change moves one event past another, and the
            # run draws differently from there (a p99 7% off the fit's).
            "value": f.values[p.name],
            "unit": p.unit,
            # ×/÷ this factor is one standard deviation (the fit is on the log scale); null: no statistic moved it.
            "uncertainty_factor": None if sd is None else float(f"{math.exp(sd):.4g}"),
            "at_bound": f.at_bound[p.name],
            "fitted_from": p.fitted_from,
        }
    return {
        "kind": KIND,
        "fitted": {
            "when": when,
            "from": source,
            "measured_on": measured_by,
            "machine": machine,
            "scenario": scenario.name,
            "simulated": {"duration_ms": f.sim_duration_ms, "seed": f.seed, "runs": f.sim_runs},
            "evaluations": f.evaluations,
            "seconds": round(f.seconds, 1),
            "sum_of_squares": round(2 * f.cost, 4),
            "optimizer": f"scipy.optimize.least_squares (trf): {f.message}",
            # How the machine's cores were shared over each measured run's load: its waits are in the fit.
            **({"machine_cpu": [None if m is None else dict(m) for m in machine_cpu]}
               if machine_cpu and any(m is not None for m in machine_cpu) else {}),
        },
        "parameters": parameters,
        # Measured, not fitted (kafkasim.calibrate.collector): every broker stalls after so many of its requests
        # (and of its fetchers' responses).
        **({"collector": collector.as_json()} if collector is not None else {}),
        "fit": [{"statistic": t.key, "measured_ms": round(t.value, 4),
                 "fitted_ms": None if t.key not in f.fitted else round(f.fitted[t.key], 4),
                 "before_ms": None if t.key not in f.before else round(f.before[t.key], 4)} for t in f.targets],
        "covariance": [[float(f"{x:.6g}") for x in row] for row in f.covariance],
        "set": overrides(f.values, scenario, collector),
    }
