"""The data source Spark calls: ``format("halfmq")`` for batch reads and streams, on PySpark's Python Data Source API.

The driver plans (queue ranges from the broker, offsets from ``offsets``); each Spark task reads one slice of one
queue through the SDK's offset read (``GET /v1/topics/{t}/queues/{q}/messages``), which touches no consumer group:
Spark owns the offsets and checkpoints them, so a restarted query (a new driver) reads each committed message once.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from functools import partial
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, DataSourceWriter, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from halfmq.client import Producer

from .offsets import QueueRanges, QueueSlice, admit, end_offsets, first_offset_at, plan, start_offsets, visible_ends
from .options import QueueOffsets, SourceOptions, Start, source_options
from .rows import message_row, schema_ddl

NAME = "halfmq"


class HalfmqDataSource(DataSource):
    """``spark.read.format("halfmq")``, ``spark.readStream.format("halfmq")``, ``df.write.format("halfmq")``."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        return schema_ddl(source_options(self.options).body_format)

    def reader(self, schema: StructType) -> DataSourceReader:
        return BatchReader(source_options(self.options))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:  # noqa: N802 - PySpark's name
        return StreamReader(source_options(self.options))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from .sink import Writer  # the sink's own options; a read never needs them

        return Writer(dict(self.options), schema)


def register(spark: Any) -> None:
    """Make ``format("halfmq")`` known to ``spark`` (a SparkSession); once per session."""
    spark.dataSource.register(HalfmqDataSource)


def client(options: SourceOptions) -> Producer[Any]:
    """The SDK's client for reads (its offset read and topic description); its sends are the sink's."""
    return Producer(options.url, token=options.token, timeout=float(options.timeout_seconds))


def queue_ranges(options: SourceOptions) -> QueueRanges:
    with client(options) as broker:
        return {(t, q.queue_id): (q.min_offset, q.max_offset) for t in options.topics for q in broker.get_topic(t).queues}


def starting_offsets(options: SourceOptions, ranges: QueueRanges) -> QueueOffsets:
    if options.starting.kind is not Start.TIMESTAMP:
        return start_offsets(options.starting, ranges)
    stamp = options.starting.timestamp_ms or 0
    with client(options) as broker:
        found = {q: first_offset_at(lo, hi, stamp, partial(first_stored, broker, *q)) for q, (lo, hi) in ranges.items()}
    return start_offsets(options.starting, ranges, found)


def first_stored(broker: Producer[Any], topic: str, queue_id: int, offset: int) -> tuple[int, int] | None:
    """The first message of the queue at or after ``offset``: (its offset, its store time), or None."""
    found = broker.read(topic, queue_id, offset, 1).messages
    return (found[0].queue_offset, found[0].store_timestamp) if found else None


def read_slice(options: SourceOptions, part: QueueSlice) -> Iterator[tuple[Any, ...]]:
    """The rows of one slice, a page at a time (at most ``options.page`` messages held).

    The slice's offsets were visible when it was planned, so a read that stops short (a broker restarting, a
    follower behind its leader) is waited for, up to ``timeout_seconds`` without progress, then an error: never
    a silent gap that Spark would checkpoint past.
    """
    offset, stalled_since = part.start, None
    with client(options) as broker:
        while offset < part.end:
            page = broker.read(part.topic, part.queue_id, offset, min(options.page, part.end - offset))
            for message in page.messages:
                if message.queue_offset >= part.end:
                    return
                yield message_row(message, options.body_format)
            if page.next_offset > offset:
                offset, stalled_since = page.next_offset, None
                continue
            stalled_since = stalled_since or time.monotonic()
            if time.monotonic() - stalled_since > options.timeout_seconds:
                raise SliceUnavailable(f"{part.topic} queue {part.queue_id}: offsets {offset}..{part.end} were planned "
                                       f"but could not be read for {options.timeout_seconds} s")
            time.sleep(0.2)


class SliceUnavailable(RuntimeError):
    """A planned range of a queue could not be read (the broker does not serve those offsets)."""


class BatchReader(DataSourceReader):
    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> Sequence[InputPartition]:
        ranges = queue_ranges(self.options)
        start = starting_offsets(self.options, ranges)
        end = end_offsets(self.options.ending, ranges)
        return [InputPartition(s) for s in plan(start, end, self.options.max_per_partition)]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        yield from read_slice(self.options, partition.value)


class StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Offsets are ``{topic: {queue: next offset}}``; Spark writes each micro-batch's to its checkpoint before it runs."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self.target: QueueOffsets | None = None  # Trigger.AvailableNow: what was there when the query started

    def initialOffset(self) -> dict[str, Any]:  # noqa: N802 - PySpark's names
        return starting_offsets(self.options, queue_ranges(self.options))

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:  # noqa: N802
        latest = self.target if self.target is not None else visible_ends(queue_ranges(self.options))
        return admit(start, latest, limit.max_rows if isinstance(limit, ReadMaxRows) else None)

    def getDefaultReadLimit(self) -> ReadLimit:  # noqa: N802
        cap = self.options.max_per_trigger
        return ReadAllAvailable() if cap is None else ReadMaxRows(cap)

    def reportLatestOffset(self) -> dict[str, Any] | None:  # noqa: N802
        return visible_ends(queue_ranges(self.options))

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802
        self.target = visible_ends(queue_ranges(self.options))

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        return [InputPartition(s) for s in plan(start, end, self.options.max_per_partition)]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        yield from read_slice(self.options, partition.value)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: the broker keeps no state for this reader (its messages stay for other readers, by retention)."""

