"""``df.write.format("halfmq")``: each Spark task sends its rows through the SDK's idempotent producer.

A row needs ``body`` (string or binary) and, unless the ``topic`` option names one for all, ``topic``; ``keys``
(array of strings), ``tag``, ``message_group`` and ``properties`` (map of strings) are used when present. Rows go
out ``batchSize`` to a request, each request stored all or none and numbered, so the SDK's retries (a timeout, a
set's failover) never store a message twice. A Spark task retried after a failure sends its rows again: the sink
is at-least-once across task retries (make ``keys`` carry an id the consumer deduplicates on, as the inbox does).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Row
from pyspark.sql.datasource import DataSourceWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from halfmq.client import Producer, outgoing
from halfmq.wire import OutgoingMessage
from halfmq.wire.base import MAX_BATCH

from .options import InvalidSparkOption


@dataclass
class Sent(WriterCommitMessage):
    messages: int


@dataclass(frozen=True)
class SinkOptions:
    url: str | None
    token: str | None
    topic: str | None  # None: each row's `topic` column
    batch_size: int


def sink_options(given: dict[str, str], schema: StructType) -> SinkOptions:
    options = {k.lower(): v for k, v in given.items()}
    names = set(schema.fieldNames())
    if "body" not in names:
        raise InvalidSparkOption("a DataFrame written to halfmq needs a 'body' column (string or binary)")
    topic = options.get("topic") or None
    if topic is None and "topic" not in names:
        raise InvalidSparkOption("name the topic: option 'topic', or a 'topic' column")
    try:
        batch = int(options.get("batchsize", "100"))
    except ValueError:
        raise InvalidSparkOption(f"option 'batchSize' takes a whole number, not {options['batchsize']!r}") from None
    if not 1 <= batch <= MAX_BATCH:
        raise InvalidSparkOption(f"option 'batchSize' is {batch}; it takes 1..{MAX_BATCH}")
    return SinkOptions(options.get("url") or None, options.get("token") or None, topic, batch)


def row_message(row: Row) -> OutgoingMessage:
    fields = row.asDict()
    body = fields["body"]
    return outgoing(bytes(body) if isinstance(body, (bytearray, memoryview)) else body, keys=fields.get("keys"), tag=fields.get("tag"),
                    message_group=fields.get("message_group"), properties=fields.get("properties") or {})


class Writer(DataSourceWriter):
    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        self.options = sink_options(options, schema)

    def write(self, iterator: Iterator[Row]) -> Sent:
        sent = 0
        pending: dict[str, list[OutgoingMessage]] = {}
        with Producer(self.options.url, token=self.options.token) as producer:
            for row in iterator:
                topic = self.options.topic or row["topic"]
                batch = pending.setdefault(topic, [])
                batch.append(row_message(row))
                if len(batch) >= self.options.batch_size:
                    sent += len(producer.send_batch(topic, pending.pop(topic)))
            for topic, batch in pending.items():
                sent += len(producer.send_batch(topic, batch))
        return Sent(sent)

    def commit(self, messages: list[Any]) -> None:
        """Nothing to finish: each batch was stored when its send returned."""

    def abort(self, messages: list[Any]) -> None:
        """Nothing to undo: batches sent before the failure stay (see the module's note on task retries)."""
