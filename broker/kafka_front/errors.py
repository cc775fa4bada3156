"""The Kafka front's refusals: one class per reason, each naming the Kafka error code the client is answered with.

The codes are kafka-python's catalogue (``kafka.errors``: one class per Kafka error code, ``errno`` its number), so no
number is spelled here twice. A refusal is answered in the API's own response shape (error_answers.py); the
connection stays open.
"""

from __future__ import annotations

from kafka import errors as kafka_errors


class KafkaRefusal(Exception):
    """A request the front answers with ``kafka_error``'s code instead of a result."""

    kafka_error: type[kafka_errors.BrokerResponseError] = kafka_errors.InvalidRequestError

    @property
    def error_code(self) -> int:
        return int(self.kafka_error.errno)


class UnsupportedVersion(KafkaRefusal):
    """A version outside the API table's range for its key, or a key the table does not hold."""

    kafka_error = kafka_errors.UnsupportedVersionError


class NotYetServed(UnsupportedVersion):
    """An API in the table whose handler is not written yet: the client learns this broker does not serve it."""


class InvalidRequest(KafkaRefusal):
    """A request body that does not decode as its API key and version say it should."""

    kafka_error = kafka_errors.InvalidRequestError


class CorruptRecords(KafkaRefusal):
    """A record batch whose CRC, sizes or records do not hold together."""

    kafka_error = kafka_errors.CorruptRecordError


class UnsupportedMessageFormat(KafkaRefusal):
    """Records in the message formats v0/v1: Kafka 4's clients write record batches v2 only, and so does the front."""

    kafka_error = kafka_errors.UnsupportedForMessageFormatError


class UnsupportedCompression(KafkaRefusal):
    """A batch compressed with a codec number Kafka does not define."""

    kafka_error = kafka_errors.UnsupportedCompressionTypeError


class BatchTooLarge(KafkaRefusal):
    """A batch whose records decompress to more bytes than the bound: refused before the rest is inflated."""

    kafka_error = kafka_errors.MessageSizeTooLargeError


class InvalidRecord(KafkaRefusal):
    """A record halfmq cannot keep as it is (a key or header that is not UTF-8 text)."""

    kafka_error = kafka_errors.InvalidRecordError


class OffsetOutOfRange(KafkaRefusal):
    """A Fetch from an offset outside the queue's visible range: the client resets as its ``auto.offset.reset`` says."""

    kafka_error = kafka_errors.OffsetOutOfRangeError


class TransactionAbortable(KafkaRefusal):
    """A transactional batch of a transaction this node did not begin (begun on a set's previous leader, or before a
    restart): TRANSACTION_ABORTABLE (KIP-890), which every client answers by aborting it and going on, where
    INVALID_TXN_STATE is fatal to kafka-python and UNKNOWN_PRODUCER_ID makes it bump its epoch and commit the rest."""

    kafka_error = kafka_errors.TransactionAbortableError


class OutOfOrderSequence(KafkaRefusal):
    """An idempotent batch whose first number does not follow the partition's last stored batch."""

    kafka_error = kafka_errors.OutOfOrderSequenceNumberError


class ProducerEpochFenced(KafkaRefusal):
    """An idempotent batch from an epoch older than the producer id's newest."""

    kafka_error = kafka_errors.InvalidProducerEpochError


class TransactionNotBegun(KafkaRefusal):
    """A transactional batch before its transaction's AddPartitionsToTxn (or after the front forgot the transaction)."""

    kafka_error = kafka_errors.InvalidTxnStateError


class InvalidConfig(KafkaRefusal):
    """A topic config halfmq does not honour per topic, or a value that is not one (CreateTopics, AlterConfigs)."""

    kafka_error = kafka_errors.InvalidConfigurationError


class ServedElsewhere(KafkaRefusal):
    """A set's member that does not serve this API now (set_view.SetView.refusal): its code sends the client on."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code

    @property
    def error_code(self) -> int:
        return self.code
