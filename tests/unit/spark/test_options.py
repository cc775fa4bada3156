"""The options of format("halfmq"), checked on the driver before anything is read."""

from __future__ import annotations

import pytest

from halfmq.spark.options import BodyFormat, InvalidSparkOption, Position, Start, source_options


def test_topics_are_required() -> None:
    with pytest.raises(InvalidSparkOption, match="topics"):
        source_options({"url": "http://b"})


def test_the_defaults_read_every_committed_message_as_text() -> None:
    options = source_options({"topics": "A, B"})
    assert options.topics == ("A", "B")
    assert options.starting == Position(Start.EARLIEST)
    assert options.ending == Position(Start.LATEST)
    assert options.body_format is BodyFormat.STRING


def test_option_names_are_case_insensitive_as_spark_s() -> None:
    options = source_options({"Topics": "A", "STARTINGOFFSETS": "latest", "bodyformat": "BINARY"})
    assert options.starting.kind is Start.LATEST
    assert options.body_format is BodyFormat.BINARY


def test_starting_offsets_take_a_json_of_queue_offsets() -> None:
    options = source_options({"topics": "A", "startingOffsets": '{"A": {"0": 4, "1": 0}}'})
    assert options.starting == Position(Start.OFFSETS, offsets={"A": {"0": 4, "1": 0}})


def test_a_starting_timestamp_wins_over_starting_offsets() -> None:
    options = source_options({"topics": "A", "startingOffsets": "latest", "startingTimestamp": "1700000000000"})
    assert options.starting == Position(Start.TIMESTAMP, timestamp_ms=1_700_000_000_000)


@pytest.mark.parametrize(("given", "named"), [
    ({"startingOffsets": "first"}, "startingOffsets"),
    ({"startingOffsets": '{"A": {"0": -1}}'}, "startingOffsets"),
    ({"startingOffsets": '{"A": {"x": 1}}'}, "startingOffsets"),
    ({"startingOffsets": '[1]'}, "startingOffsets"),
    ({"endingOffsets": "earliest"}, "endingOffsets"),
    ({"startingTimestamp": "yesterday"}, "startingTimestamp"),
    ({"bodyFormat": "xml"}, "bodyFormat"),
    ({"pageSize": "1001"}, "pageSize"),
    ({"maxMessagesPerPartition": "0"}, "maxMessagesPerPartition"),
    ({"maxMessagesPerTrigger": "-3"}, "maxMessagesPerTrigger"),
])
def test_a_malformed_option_is_refused_naming_it(given: dict[str, str], named: str) -> None:
    with pytest.raises(InvalidSparkOption, match=named):
        source_options({"topics": "A", **given})
