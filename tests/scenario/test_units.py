"""Human units -> canonical numbers, and back exactly."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_core import PydanticCustomError

from kafkasim.scenario.units import (
    format_bandwidth,
    format_duration,
    format_rate,
    format_size,
    parse_bandwidth,
    parse_duration,
    parse_rate,
    parse_size,
    show_duration,
)


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("500ms", 500.0),
        ("30s", 30_000.0),
        ("2m", 120_000.0),
        ("1h", 3_600_000.0),
        ("7d", 604_800_000.0),
        ("50us", 0.05),
        ("0.5ms", 0.5),
        ("1.5s", 1500.0),
        (" 10 s ", 10_000.0),
        ("1e3ms", 1000.0),
        ("0s", 0.0),
    ],
)
def test_durations_become_milliseconds(text: str, ms: float) -> None:
    assert parse_duration(text) == pytest.approx(ms)


@pytest.mark.parametrize(
    ("text", "n"),
    [
        ("1B", 1),
        ("1KB", 1000),
        ("16MB", 16_000_000),
        ("1GB", 10**9),
        ("1KiB", 1024),
        ("1MiB", 1024**2),
        ("1GiB", 1024**3),
        ("1.5KiB", 1536),
        ("55MiB", 57_671_680),
    ],
)
def test_sizes_become_bytes(text: str, n: int) -> None:
    assert parse_size(text) == n
    assert isinstance(parse_size(text), int)


def test_rates_become_per_second() -> None:
    assert parse_rate("5000/s") == 5000.0
    assert parse_rate("300/m") == pytest.approx(5.0)
    assert parse_rate("3600/h") == pytest.approx(1.0)


def test_bandwidth_becomes_bytes_per_second() -> None:
    assert parse_bandwidth("10Gbit/s") == 1.25e9
    assert parse_bandwidth("100Mbit/s") == 12.5e6
    assert parse_bandwidth("8000bit/s") == 1000.0
    assert parse_bandwidth("100MB/s") == 1e8
    assert parse_bandwidth("1MiB/s") == 1024.0**2


@pytest.mark.parametrize(
    ("parse", "text", "fragment"),
    [
        (parse_duration, "500", "units: us, ms, s, m, h, d"),
        (parse_duration, "5 parsecs", "not a duration"),
        (parse_duration, "-5s", "must not be negative"),
        (parse_duration, "1e20s", "too large"),
        (parse_duration, "1e400s", "too large"),
        (parse_size, "1kb", "units: B, KB, MB, GB, KiB, MiB, GiB"),
        (parse_size, "0.5B", "whole number of bytes"),
        (parse_size, "-1KiB", "must not be negative"),
        (parse_size, "2000000GiB", "too large"),
        (parse_rate, "5000", "e.g. '5000/s'"),
        (parse_rate, "5/d", "units: /s, /m, /h"),
        (parse_bandwidth, "10Gb", "not a bandwidth"),
    ],
)
def test_bad_quantities_say_what_is_allowed(parse, text: str, fragment: str) -> None:
    with pytest.raises(PydanticCustomError) as info:
        parse(text)
    assert fragment in str(info.value)


def test_formatting_picks_the_readable_unit() -> None:
    assert format_duration(30_000.0) == "30s"
    assert format_duration(120_000.0) == "2m"
    assert format_duration(604_800_000.0) == "7d"
    assert format_duration(0.05) == "50us"
    assert format_duration(0.5) == "500us"
    assert format_duration(1.25) == "1250us"
    assert format_duration(0.0001) == "0.0001ms"
    assert format_duration(0.0) == "0ms"
    assert format_size(1024**3) == "1GiB"
    assert format_size(57_671_680) == "55MiB"
    assert format_size(1_048_588) == "1048588B"
    assert format_rate(5.0) == "5/s"
    assert format_bandwidth(1.25e9) == "10Gbit/s"


@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=0, max_value=1e12, allow_nan=False))
def test_durations_round_trip_exactly(ms: float) -> None:
    assert parse_duration(format_duration(ms)) == ms


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=2**50))
def test_sizes_round_trip_exactly(n: int) -> None:
    assert parse_size(format_size(n)) == n


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=1e-6, max_value=1e6, allow_nan=False))
def test_rates_round_trip_exactly(rate: float) -> None:
    assert parse_rate(format_rate(rate)) == rate


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=125.0, max_value=1e15, allow_nan=False))
def test_bandwidths_round_trip_exactly(bps: float) -> None:
    assert parse_bandwidth(format_bandwidth(bps)) == bps


@pytest.mark.parametrize(
    ("ms", "shown"),
    [
        (19080.877999999997, "19080.878ms"),  # "19.080878s" as a float: no binary noise in a message
        (3.3000000000000003, "3.3ms"),  # 1.1ms + 2.2ms
        (0.12300000000000001, "123us"),  # "0.000123s"
        (0.0005, "0.5us"),
        (1500.5, "1500.5ms"),
        (6000.0, "6s"),
        (120_000.0, "2m"),
        (86_400_000.0, "1d"),
        (0.0, "0ms"),
    ],
)
def test_durations_in_messages_are_shown_as_written(ms: float, shown: str) -> None:
    assert show_duration(ms) == shown


# --- whitespace: trimmed around a value as Kafka's ConfigDef.parseType does (String.trim), spaces inside ---


@pytest.mark.parametrize(
    ("parse", "text", "value"),
    [
        (parse_duration, " 10 s ", 10_000.0),
        (parse_duration, "30s\n", 30_000.0),  # a block scalar's line break
        (parse_duration, "\t30s\r\n", 30_000.0),
        (parse_duration, "30  s", 30_000.0),
        (parse_size, " 1 KiB ", 1024),
        (parse_rate, "100 / s", 100.0),
        (parse_bandwidth, "10 Gbit/s\n", 1.25e9),
    ],
)
def test_ascii_whitespace_around_a_quantity_is_trimmed_and_spaces_may_separate_its_unit(parse, text, value) -> None:
    assert parse(text) == value


@pytest.mark.parametrize(
    ("parse", "text", "why"),
    [
        # All of these were read as 30 s / 5000/s (`\s` takes any Unicode space, `\d` any script's digits).
        (parse_duration, "30\u00a0s", "only spaces may stand inside it"),  # a no-break space
        (parse_duration, "30s\u00a0", "only ASCII whitespace around it"),
        (parse_duration, "\u300030s", "only ASCII whitespace around it"),  # an ideographic space
        (parse_duration, "30\ts", "only spaces may stand inside it"),
        (parse_duration, "30\ns", "only spaces may stand inside it"),
        (parse_duration, "\u0663\u0660s", "digits are 0-9"),  # Arabic-Indic 30
        (parse_rate, "5 000/s", "not a rate"),  # spaces were removed anywhere: 5000/s
    ],
)
def test_other_whitespace_and_other_digits_are_refused(parse, text: str, why: str) -> None:
    with pytest.raises(PydanticCustomError) as info:
        parse(text)
    assert why in str(info.value)
