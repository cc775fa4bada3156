"""The source's options, read once from what ``spark.read.option(...)`` was given: plain values, no Spark, no I/O.

Spark hands a data source its options as a case-insensitive map of strings; every check happens here, on the
driver, before a partition is planned, so a typo is one clear ``InvalidSparkOption`` and not a failed task.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

PAGE_MAX = 1000  # the offset read route's own ceiling on `max` (docs/http-api.md)


class InvalidSparkOption(ValueError):
    """An option of ``format("halfmq")`` is missing or malformed; the message names it and what it accepts."""


class Start(str, Enum):
    EARLIEST = "earliest"
    LATEST = "latest"
    OFFSETS = "offsets"  # per queue, from a JSON object
    TIMESTAMP = "timestamp"  # the first message stored at or after an epoch-ms time


class BodyFormat(str, Enum):
    STRING = "string"
    BINARY = "binary"


QueueOffsets = dict[str, dict[str, int]]  # {"ORDER_TOPIC": {"0": 12, "1": 7}}: the next offset to read, per queue


@dataclass(frozen=True)
class Position:
    """Where a read starts (or a batch read ends): a queue's first message, its end, given offsets, or a time."""

    kind: Start
    offsets: QueueOffsets | None = None
    timestamp_ms: int | None = None


@dataclass(frozen=True)
class SourceOptions:
    url: str | None  # one broker or a set's nodes, comma-separated (None: $HALFMQ_URL, as the SDK)
    token: str | None
    topics: tuple[str, ...]
    starting: Position
    ending: Position  # batch reads only; a stream reads on
    body_format: BodyFormat = BodyFormat.STRING
    page: int = PAGE_MAX  # messages per offset read request
    max_per_partition: int = 100_000  # a queue's range is split into Spark partitions of at most this many offsets
    max_per_trigger: int | None = None  # a micro-batch reads at most this many offsets over all queues (None: all there are)
    timeout_seconds: int = 30  # one request's timeout, and how long a read waits for offsets it was promised


def source_options(given: Mapping[str, str]) -> SourceOptions:
    """Validated options; ``given`` is Spark's case-insensitive option map (or any mapping with lower-case keys)."""
    options = {k.lower(): v for k, v in given.items()}
    topics = tuple(t.strip() for t in options.get("topics", options.get("topic", "")).split(",") if t.strip())
    if not topics:
        raise InvalidSparkOption("option 'topics' is required: one topic or several, comma-separated")
    return SourceOptions(
        url=options.get("url") or None,
        token=options.get("token") or None,
        topics=topics,
        starting=starting_position(options),
        ending=ending_position(options.get("endingoffsets", "latest")),
        body_format=_choice(BodyFormat, "bodyFormat", options.get("bodyformat", "string")),
        page=_int_option(options, "pageSize", PAGE_MAX, 1, PAGE_MAX),
        max_per_partition=_int_option(options, "maxMessagesPerPartition", 100_000, 1, 2**62),
        max_per_trigger=_optional_int(options, "maxMessagesPerTrigger", 1, 2**62),
        timeout_seconds=_int_option(options, "timeoutSeconds", 30, 1, 3600),
    )


def starting_position(options: Mapping[str, str]) -> Position:
    """``startingTimestamp`` (epoch ms) wins over ``startingOffsets`` (earliest, latest, or a JSON of queue offsets)."""
    if "startingtimestamp" in options:
        return Position(Start.TIMESTAMP, timestamp_ms=_optional_int(options, "startingTimestamp", 0, 2**62))
    return _position("startingOffsets", options.get("startingoffsets", "earliest"))


def ending_position(text: str) -> Position:
    position = _position("endingOffsets", text)
    if position.kind is Start.EARLIEST:
        raise InvalidSparkOption("option 'endingOffsets' takes 'latest' or a JSON of queue offsets, not 'earliest'")
    return position


def _position(name: str, text: str) -> Position:
    value = text.strip()
    if value.lower() in (Start.EARLIEST.value, Start.LATEST.value):
        return Position(Start(value.lower()))
    try:
        parsed = json.loads(value)
    except ValueError:
        raise InvalidSparkOption(f"option {name!r} takes 'earliest', 'latest' or a JSON object "
                                 f"like {{\"TOPIC\": {{\"0\": 12}}}}, not {text!r}") from None
    return Position(Start.OFFSETS, offsets=queue_offsets(name, parsed))


def queue_offsets(name: str, parsed: object) -> QueueOffsets:
    """A JSON object of topic → {queue id → offset}, every offset a whole number ≥ 0."""
    if not isinstance(parsed, dict):
        raise InvalidSparkOption(f"option {name!r}: expected a JSON object of topic -> {{queue -> offset}}")
    out: QueueOffsets = {}
    for topic, queues in parsed.items():
        if not isinstance(queues, dict):
            raise InvalidSparkOption(f"option {name!r}: topic {topic!r} needs an object of queue -> offset")
        for queue, offset in queues.items():
            if not str(queue).isdigit() or type(offset) is not int or offset < 0:
                raise InvalidSparkOption(f"option {name!r}: {topic!r} queue {queue!r} -> {offset!r} is not a queue id and an offset >= 0")
        out[str(topic)] = {str(int(q)): int(o) for q, o in queues.items()}
    return out


def _choice(kind: type[BodyFormat], name: str, text: str) -> BodyFormat:
    try:
        return kind(text.strip().lower())
    except ValueError:
        raise InvalidSparkOption(f"option {name!r} takes one of {', '.join(k.value for k in kind)}, not {text!r}") from None


def _int_option(options: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    value = _optional_int(options, name, low, high)
    return default if value is None else value


def _optional_int(options: Mapping[str, str], name: str, low: int, high: int) -> int | None:
    text = options.get(name.lower())
    if text is None:
        return None
    try:
        value = int(text)
    except ValueError:
        raise InvalidSparkOption(f"option {name!r} takes a whole number, not {text!r}") from None
    if not low <= value <= high:
        raise InvalidSparkOption(f"option {name!r} is {value}; it takes {low}..{high}")
    return value
