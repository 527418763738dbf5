r"""Human units in scenario files, converted once to the canonical units the engine uses.

Canonical units: durations in milliseconds (float for simulator settings, int for Kafka's `.ms` keys,
which are integers in Kafka), sizes in bytes (int), rates in events per second (float), bandwidth in bytes
per second (float).

Two families of inputs:
* Kafka keys (`linger.ms`, `fetch.min.bytes`, ...) accept what Kafka accepts, a bare integer in the key's
  unit, and also a human string ("30s", "1MiB").
* Simulator settings always need a unit in a file: `duration: 60` is ambiguous, `duration: 60s` is not.
  Code that builds a model directly (no "yaml" validation context) may pass canonical numbers.

Whitespace: around a value, spaces, tabs, line breaks and other ASCII control characters are ignored
(`" 30s"`, `"30s\n"` read as 30s), as Kafka's ConfigDef.parseType trims every numeric config value
(Java's String.trim, which removes the characters up to U+0020); between the number and its unit, spaces
are allowed (`10 s`, as SI writes it; a rate's `/` may have spaces around it: `100 / s`). Any other
whitespace is refused: a tab or line break inside (`"30\ts"`), a no-break or other Unicode space
anywhere (`"30\u00a0s"`), which Kafka does not trim either. Digits are ASCII (`\d` would take any
script's).

Every formatter here produces a string its parser turns back into exactly the same number, which is what
lets a dumped scenario load back equal.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer, ValidationInfo, WithJsonSchema

from kafkasim.scenario.errors import fail

MAX_MS = 1e12  # ~31 years: the most a Kafka `.ms` key (a Java long) is taken to mean; larger is a typo
MAX_BYTES = 2**50  # 1 PiB: the most any size string may say before the key's own range applies
# Simulator quantities: ranges no real use needs to leave, and beyond which a run's work explodes.
MAX_SIM_MS = 86_400_000.0  # 1d: simulated run time, latencies, costs, fault times
MAX_SIM_BYTES = 1024**3  # 1GiB: a record (Kafka's sizes are 32-bit; its default max.request.size is 1MiB)
MAX_RATE = 1e6  # records per second per producer: about what one real producer can send
MAX_BANDWIDTH = 1e15  # bytes per second
# 1 Kbit/s: slower than any real link. A zero bandwidth would make every message take forever.
MIN_BANDWIDTH = 125.0  # bytes per second
BANDWIDTH_RANGE = "allowed: 1Kbit/s to 8000Tbit/s"

DURATION_UNITS: dict[str, float] = {
    "us": 0.001,
    "ms": 1.0,
    "s": 1000.0,
    "m": 60_000.0,
    "h": 3_600_000.0,
    "d": 86_400_000.0,
}
SIZE_UNITS: dict[str, int] = {
    "B": 1,
    "KB": 1000,
    "MB": 1000**2,
    "GB": 1000**3,
    "KiB": 1024,
    "MiB": 1024**2,
    "GiB": 1024**3,
}
BANDWIDTH_UNITS: dict[str, float] = {
    "bit/s": 1 / 8,
    "Kbit/s": 1e3 / 8,
    "Mbit/s": 1e6 / 8,
    "Gbit/s": 1e9 / 8,
    "B/s": 1.0,
    "KB/s": 1e3,
    "MB/s": 1e6,
    "GB/s": 1e9,
    "KiB/s": 1024.0,
    "MiB/s": 1024.0**2,
    "GiB/s": 1024.0**3,
}
RATE_UNITS: dict[str, float] = {"/s": 1.0, "/m": 1 / 60, "/h": 1 / 3600}

# What Java's String.trim removes (Kafka's ConfigDef.parseType trims numeric values with it).
_TRIMMED = "".join(chr(c) for c in range(0x21))
_T = r"[\x00-\x20]*"  # the same, in the JSON Schema patterns (ECMA-262 and Python read \xHH alike)
_NUMBER = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_QUANTITY = re.compile(rf"({_NUMBER}) *([A-Za-z/]*)")  # matched whole on the trimmed value
_UNSIGNED = r"([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?"
_ASCII_DIGITS = re.compile(r"[0-9]+")

DURATION_PATTERN = rf"^{_T}{_UNSIGNED} *(us|ms|s|m|h|d){_T}$"
SIZE_PATTERN = rf"^{_T}{_UNSIGNED} *(B|KB|MB|GB|KiB|MiB|GiB){_T}$"
BANDWIDTH_PATTERN = rf"^{_T}{_UNSIGNED} *([KMG]?bit/s|[KMG]?B/s|[KMG]iB/s){_T}$"
RATE_PATTERN = rf"^{_T}{_UNSIGNED} */ *[smh]{_T}$"

YAML_CONTEXT = {"source": "yaml"}
"""Validation context of anything read from a file or a --set override: simulator units are required."""


def from_file(info: ValidationInfo | None) -> bool:
    return info is not None and isinstance(info.context, dict) and info.context.get("source") == "yaml"


def _show(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"  # as YAML writes them
    if isinstance(value, dict | list):
        return "a mapping" if isinstance(value, dict) else "a list"
    text = repr(value) if not isinstance(value, int | float) or abs(value) < 1e15 else "a huge number"
    return text if len(text) <= 30 else text[:27] + "..."


def trim(value: str) -> str:
    """`value` without what Kafka's ConfigDef trims around a config value (Java's String.trim)."""
    return value.strip(_TRIMMED)


def _split(value: str, what: str, units: dict[str, Any], example: str) -> tuple[Decimal, str]:
    trimmed = trim(value)
    m = _QUANTITY.fullmatch(trimmed)
    if m is None or m.group(2) not in units:
        allowed = ", ".join(units)
        why = ""
        if any(c.isspace() and c != " " for c in trimmed):
            why = ": only spaces may stand inside it, and only ASCII whitespace around it"
        elif any(c.isdigit() and not c.isascii() for c in trimmed):
            why = ": digits are 0-9"
        fail(f"{_show(value)} is not a {what}{why} (write a number and a unit, e.g. {example!r}; units: {allowed})")
    try:
        number = Decimal(m.group(1))
    except InvalidOperation:  # pragma: no cover - the regex only lets numbers through
        fail(f"{_show(value)} is not a {what}")
    if not number.is_finite() or abs(number) > Decimal("1e30"):
        fail(f"{_show(value)} is too large")
    if number < 0:
        fail(f"{what} must not be negative, got {_show(value)}")
    return number, m.group(2)


def parse_duration(value: str) -> float:
    """'500ms' -> 500.0, '2m' -> 120000.0, '50us' -> 0.05 (milliseconds)."""
    number, unit = _split(value, "duration", DURATION_UNITS, "500ms")
    ms = float(number) * DURATION_UNITS[unit]
    if ms > MAX_MS:
        fail(f"duration {_show(value)} is too large (at most {MAX_MS:.0e} ms, about 31 years)")
    return ms


def parse_size(value: str) -> int:
    """'1KiB' -> 1024, '16MB' -> 16000000, '1.5KiB' -> 1536 (bytes; must come out whole)."""
    number, unit = _split(value, "size", SIZE_UNITS, "16KiB")
    exact = number * SIZE_UNITS[unit]
    if exact > MAX_BYTES:
        fail(f"size {_show(value)} is too large (at most 1PiB)")
    if exact != exact.to_integral_value():
        fail(f"size {_show(value)} is not a whole number of bytes")
    return int(exact)


def parse_rate(value: str) -> float:
    """'5000/s' -> 5000.0, '300/m' -> 5.0 (per second)."""
    number, unit = _split(re.sub(r"/ +", "/", value), "rate", RATE_UNITS, "5000/s")
    return _check_rate(float(number) * RATE_UNITS[unit], value)


def _check_rate(rate: float, shown: object) -> float:
    if rate > MAX_RATE:
        fail(f"rate {_show(shown)} is out of range (allowed: up to {MAX_RATE:.0f}/s per producer)")
    return rate


def parse_bandwidth(value: str) -> float:
    """'10Gbit/s' -> 1.25e9, '100MB/s' -> 1e8 (bytes per second)."""
    number, unit = _split(value, "bandwidth", BANDWIDTH_UNITS, "10Gbit/s")
    return _check_bandwidth(float(number) * BANDWIDTH_UNITS[unit], value)


def _check_bandwidth(bps: float, shown: object) -> float:
    if not MIN_BANDWIDTH <= bps <= MAX_BANDWIDTH:
        fail(f"bandwidth {_show(shown)} is out of range ({BANDWIDTH_RANGE})")
    return bps


# --- formatting (exact round trip) ---------------------------------------------------------------------


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else repr(float(x))


def _first_exact(value: float, units: dict[str, float], parse: Any, fallback: str) -> str:
    for unit, factor in units.items():
        q = value / factor
        if float(q).is_integer() and q >= 1:
            text = f"{int(q)}{unit}"
            if parse(text) == value:
                return text
    return fallback


def format_duration(ms: float) -> str:
    if ms == 0:
        return "0ms"
    largest_first = dict(reversed(list(DURATION_UNITS.items())))
    return _first_exact(ms, largest_first, parse_duration, f"{_num(ms)}ms")


def show_duration(ms: float) -> str:
    """A duration for a message, as an author writes one: the largest of d, h, m, s that holds it whole ("6s",
    "2m"), else ms ("19080.878ms", "1500.5ms"), or us below a millisecond ("500us", "0.5us"). The binary
    noise of a float is left out: "19.080878s" is 19080.877999999997 ms, shown as 19080.878ms. Unlike
    `format_duration` it need not parse back to the same float, so it is for people, not for files."""
    clean = float(f"{ms:.12g}")
    if clean == 0:
        return "0ms"
    for unit in ("d", "h", "m", "s"):
        whole = clean / DURATION_UNITS[unit]
        if whole.is_integer():
            return f"{int(whole)}{unit}"
    if abs(clean) < 1:
        return f"{_decimal(clean * 1000)}us"
    return f"{_decimal(clean)}ms"


def _decimal(x: float) -> str:
    """`x` in plain decimal notation, no exponent, no float noise (`1e-05` -> `0.00001`, `2.0` -> `2`)."""
    text = format(Decimal(f"{x:.12g}"), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def format_size(n: int) -> str:
    if n == 0:
        return "0B"
    for unit in ("GiB", "MiB", "KiB", "GB", "MB", "KB"):
        if n % SIZE_UNITS[unit] == 0:
            return f"{n // SIZE_UNITS[unit]}{unit}"
    return f"{n}B"


def format_rate(per_second: float) -> str:
    return _first_exact(per_second, {"/s": 1.0, "/m": 1 / 60, "/h": 1 / 3600}, parse_rate, f"{_num(per_second)}/s")


def format_bandwidth(bps: float) -> str:
    preferred = {u: BANDWIDTH_UNITS[u] for u in ("Gbit/s", "Mbit/s", "Kbit/s", "GiB/s", "MiB/s", "KiB/s")}
    return _first_exact(bps, preferred, parse_bandwidth, f"{_num(bps)}B/s")


# --- pydantic field types --------------------------------------------------------------------------------


def _reject_non_numbers(value: object, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        fail(f"expected a {what}, got {_show(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        fail(f"expected a {what}, got {_show(value)}")


def _canonical_number(value: int | float, what: str, unit: str, limit: float) -> float:
    if value < 0:
        fail(f"{what} must not be negative, got {_show(value)}")
    if value > limit:
        fail(f"{what} {_show(value)} is too large (at most {limit:.0e} {unit})")
    return float(value)


def _sim_duration(value: Any, info: ValidationInfo) -> Any:
    _reject_non_numbers(value, "duration")
    if isinstance(value, str):
        ms = parse_duration(value)
    elif from_file(info):
        fail(f"{_show(value)} needs a unit, e.g. '{_show(value)}ms' (units: {', '.join(DURATION_UNITS)})")
    else:
        ms = _canonical_number(value, "duration", "ms", MAX_MS)
    if ms > MAX_SIM_MS:
        fail(f"duration {_show(value)} is out of range (allowed: up to 1d)")
    return ms


def _sim_size(value: Any, info: ValidationInfo) -> Any:
    _reject_non_numbers(value, "size")
    if isinstance(value, str):
        n = parse_size(value)
    elif from_file(info):
        fail(f"{_show(value)} needs a unit, e.g. '{_show(value)}B' (units: {', '.join(SIZE_UNITS)})")
    elif isinstance(value, float) and not value.is_integer():
        fail(f"size {_show(value)} is not a whole number of bytes")
    else:
        n = int(_canonical_number(value, "size", "bytes", MAX_BYTES))
    if n > MAX_SIM_BYTES:
        fail(f"size {_show(value)} is out of range (allowed: up to 1GiB)")
    return n


def _rate(value: Any, info: ValidationInfo) -> Any:
    _reject_non_numbers(value, "rate")
    if isinstance(value, str):
        return parse_rate(value)
    if from_file(info):
        fail(f"{_show(value)} needs a unit, e.g. '{_show(value)}/s' (units: /s, /m, /h)")
    return _check_rate(_canonical_number(value, "rate", "per second", math.inf), f"{_show(value)}/s")


def _bandwidth(value: Any, info: ValidationInfo) -> Any:
    _reject_non_numbers(value, "bandwidth")
    if isinstance(value, str):
        return parse_bandwidth(value)
    if from_file(info):
        fail(f"{_show(value)} needs a unit, e.g. '10Gbit/s' (units: {', '.join(BANDWIDTH_UNITS)})")
    return _check_bandwidth(float(value), f"{_show(value)}B/s")


def _kafka_ms(value: Any) -> Any:
    """Kafka's `.ms` keys: an integer number of milliseconds (Kafka's own form) or a duration string."""
    _reject_non_numbers(value, "number of milliseconds")
    if isinstance(value, str) and _ASCII_DIGITS.fullmatch(trim(value)):
        value = int(trim(value))  # Kafka parses "500" from a properties file too (trimmed, as ConfigDef does)
    if isinstance(value, str):
        ms = parse_duration(value)
        if not ms.is_integer():
            fail(f"{_show(value)} is not a whole number of milliseconds (Kafka's .ms keys are integers)")
        return int(ms)
    if isinstance(value, float):
        fail(f"{_show(value)} is not a whole number of milliseconds; write an integer or a duration like '1.5s'")
    if value < 0:
        fail(f"must not be negative, got {value}")
    if value > MAX_MS:
        fail(f"{_show(value)} ms is too large (at most {MAX_MS:.0e} ms)")
    return value


def _kafka_bytes(value: Any) -> Any:
    """Kafka's byte-count keys: an integer number of bytes (Kafka's own form) or a size string."""
    _reject_non_numbers(value, "number of bytes")
    if isinstance(value, str) and _ASCII_DIGITS.fullmatch(trim(value)):
        value = int(trim(value))
    if isinstance(value, str):
        return parse_size(value)
    if isinstance(value, float):
        fail(f"{_show(value)} is not a whole number of bytes; write an integer or a size like '1MiB'")
    if value < 0:
        fail(f"must not be negative, got {value}")
    if value > MAX_BYTES:
        fail(f"{_show(value)} bytes is too large (at most 1PiB)")
    return value


@dataclass(frozen=True, eq=False)  # eq=False keeps it hashable, as Annotated metadata must be
class Quantity:
    """Annotated marker: the range a unit type allows by itself and how to write its values, for schema
    descriptions and messages (`kafkasim.scenario.ranges`). The field's own ge/gt/le/lt narrow it."""

    low: float
    high: float
    show: Callable[[Any], str]
    low_open: bool = False
    suffix: str = ""
    """Written once after the range ("0 to 2147483647 bytes"), for Kafka keys written as bare integers."""


def _whole(value: Any) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _schema(pattern: str, example: str, integer: str | None = None) -> dict[str, Any]:
    text = {"type": "string", "pattern": pattern, "examples": [example]}
    if integer is None:
        return text
    return {"anyOf": [{"type": "integer", "minimum": 0, "description": integer}, text]}


Duration = Annotated[
    float,
    BeforeValidator(_sim_duration),
    PlainSerializer(format_duration, when_used="json"),
    WithJsonSchema(_schema(DURATION_PATTERN, "500ms")),
    Quantity(0, MAX_SIM_MS, show_duration),
]
"""A simulator duration: needs a unit in a file ("500ms", "30s", "2m"); float milliseconds in the model."""

Size = Annotated[
    int,
    BeforeValidator(_sim_size),
    PlainSerializer(format_size, when_used="json"),
    WithJsonSchema(_schema(SIZE_PATTERN, "1KiB")),
    Quantity(0, MAX_SIM_BYTES, format_size),
]
"""A simulator size: needs a unit in a file ("1KiB", "16MB"); int bytes in the model."""

Rate = Annotated[
    float,
    BeforeValidator(_rate),
    PlainSerializer(format_rate, when_used="json"),
    WithJsonSchema(_schema(RATE_PATTERN, "5000/s")),
    Quantity(0, MAX_RATE, format_rate),
]
"""Events per unit of time ("5000/s", "300/m"); float per second in the model."""

Bandwidth = Annotated[
    float,
    BeforeValidator(_bandwidth),
    PlainSerializer(format_bandwidth, when_used="json"),
    WithJsonSchema(_schema(BANDWIDTH_PATTERN, "10Gbit/s")),
    Quantity(MIN_BANDWIDTH, MAX_BANDWIDTH, lambda bps: {MIN_BANDWIDTH: "1Kbit/s", MAX_BANDWIDTH: "8000Tbit/s"}.get(
        bps, format_bandwidth(bps))),
]
"""Link bandwidth ("10Gbit/s", "100MB/s"); float bytes per second in the model."""

KafkaMs = Annotated[
    int,
    BeforeValidator(_kafka_ms),
    WithJsonSchema(_schema(DURATION_PATTERN, "30s", integer="milliseconds")),
    Quantity(0, MAX_MS, _whole, suffix="ms"),
]
"""A Kafka `.ms` key: integer milliseconds as in Kafka, or a duration string; int milliseconds in the model."""

KafkaBytes = Annotated[
    int,
    BeforeValidator(_kafka_bytes),
    WithJsonSchema(_schema(SIZE_PATTERN, "1MiB", integer="bytes")),
    Quantity(0, MAX_BYTES, _whole, suffix="bytes"),
]
"""A Kafka byte-count key: integer bytes as in Kafka, or a size string; int bytes in the model."""
