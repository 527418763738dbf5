"""LogOffsetMetadata, 3.8+ rules (KAFKA-16452); Kafka's LogOffsetMetadataTest re-expressed."""

import pytest

from kafkasim.broker.log import UNKNOWN_OFFSET_METADATA, LogOffsetMetadata


def test_message_offset_only():
    assert LogOffsetMetadata(5).message_offset_only
    assert not LogOffsetMetadata(5, 0, 0).message_offset_only
    # Only both segment fields at -1 make it message-only.
    assert not LogOffsetMetadata(5, -1, 0).message_offset_only


def test_unknown_offset_metadata_is_message_only_minus_one():
    # KAFKA-16452: 3.8+ value is (-1, -1, -1), no longer (-1, 0, 0).
    assert LogOffsetMetadata(-1, -1, -1) == UNKNOWN_OFFSET_METADATA
    assert UNKNOWN_OFFSET_METADATA.message_offset_only


def test_on_older_segment():
    m1 = LogOffsetMetadata(1, 0, 1)
    m2 = LogOffsetMetadata(5, 4, 2)
    message_only = LogOffsetMetadata(1)
    assert m1.on_older_segment(m2)
    assert not m2.on_older_segment(m1)
    assert not m1.on_older_segment(m1)
    # 3.8+: never raises, False when either side is message-only.
    assert not m1.on_older_segment(message_only)
    assert not message_only.on_older_segment(m2)
    assert not message_only.on_older_segment(message_only)


def test_on_same_segment():
    m1 = LogOffsetMetadata(1, 0, 1)
    m2 = LogOffsetMetadata(5, 0, 2)
    m3 = LogOffsetMetadata(7, 4, 2)
    assert m1.on_same_segment(m2)
    assert not m1.on_same_segment(m3)
    assert not m1.on_same_segment(LogOffsetMetadata(1))
    assert not LogOffsetMetadata(1).on_same_segment(m1)
    # Two message-only values share no segment either (both "bases" are -1).
    assert not LogOffsetMetadata(1).on_same_segment(LogOffsetMetadata(5))


def test_position_diff():
    m1 = LogOffsetMetadata(1, 0, 100)
    m2 = LogOffsetMetadata(5, 0, 350)
    assert m2.position_diff(m1) == 250
    assert m1.position_diff(m2) == -250


def test_position_diff_raises_with_kafka_reasons():
    with pytest.raises(ValueError, match="only has message offset info"):
        LogOffsetMetadata(1).position_diff(LogOffsetMetadata(1, 0, 0))
    with pytest.raises(ValueError, match="not on the same segment"):
        LogOffsetMetadata(1, 0, 0).position_diff(LogOffsetMetadata(1))
    with pytest.raises(ValueError, match="not on the same segment"):
        LogOffsetMetadata(1, 0, 0).position_diff(LogOffsetMetadata(9, 8, 0))


def test_equality_and_str():
    assert LogOffsetMetadata(3, 0, 10) == LogOffsetMetadata(3, 0, 10)
    assert LogOffsetMetadata(3, 0, 10) != LogOffsetMetadata(3, 3, 0)
    assert len({LogOffsetMetadata(3, 0, 10), LogOffsetMetadata(3, 0, 10)}) == 1
    assert str(LogOffsetMetadata(3, 0, 10)) == "(offset=3, segment=[0:10])"


def test_frozen():
    import dataclasses

    import pytest as _pytest

    m = LogOffsetMetadata(3, 0, 10)
    with _pytest.raises(dataclasses.FrozenInstanceError):
        m.message_offset = 4  # type: ignore[misc]
    assert repr(LogOffsetMetadata(7)) == (
        "LogOffsetMetadata(message_offset=7, segment_base_offset=-1, relative_position_in_segment=-1)"
    )
