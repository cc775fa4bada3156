"""halfmq's typed errors as Kafka error codes: the one table the front's handlers answer a use case's refusal with.

The most specific class wins (the table is searched along the error's MRO, as the gRPC front's status_codes.py does),
so a new subclass of InvalidRequest answers INVALID_REQUEST until it is given its own row. An access refusal is
answered in the resource's own terms: TOPIC_ or GROUP_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from kafka import errors as kafka_errors

from halfmq import errors

from .errors import KafkaRefusal

CODES: dict[type[errors.BrokerError], type[kafka_errors.BrokerResponseError]] = {
    errors.InvalidRequest: kafka_errors.InvalidRequestError,
    errors.InvalidTopicName: kafka_errors.InvalidTopicError,
    errors.SystemTopicForbidden: kafka_errors.InvalidTopicError,
    errors.InvalidQueueId: kafka_errors.UnknownTopicOrPartitionError,
    errors.InvalidQueueCount: kafka_errors.InvalidPartitionsError,
    errors.InvalidGroupName: kafka_errors.InvalidGroupIdError,
    errors.ReservedProperty: kafka_errors.InvalidRecordError,
    errors.InvalidProperty: kafka_errors.InvalidRecordError,
    errors.TooManyKeys: kafka_errors.InvalidRecordError,
    errors.BadBodyEncoding: kafka_errors.InvalidRecordError,
    errors.MessageTooLarge: kafka_errors.MessageSizeTooLargeError,
    errors.RequestTooLarge: kafka_errors.RecordListTooLargeError,
    errors.TopicNotFound: kafka_errors.UnknownTopicOrPartitionError,
    errors.TopicAlreadyExists: kafka_errors.TopicAlreadyExistsError,
    errors.TopicInUse: kafka_errors.PolicyViolationError,
    errors.InvalidRetention: kafka_errors.InvalidConfigurationError,
    errors.Unauthenticated: kafka_errors.SaslAuthenticationFailedError,
    errors.AccessDenied: kafka_errors.TopicAuthorizationFailedError,
    errors.NotLeader: kafka_errors.NotLeaderForPartitionError,
    errors.FlushDiskTimeout: kafka_errors.RequestTimedOutError,
    errors.StoreUnavailable: kafka_errors.KafkaStorageError,
    errors.BrokerUnavailable: kafka_errors.BrokerNotAvailableError,
    errors.TooManyProducerIds: kafka_errors.ThrottlingQuotaExceededError,
    errors.ProducerFenced: kafka_errors.ProducerFencedError,
    errors.InvalidProducerEpoch: kafka_errors.InvalidProducerEpochError,
    errors.InvalidTxnState: kafka_errors.InvalidTxnStateError,
    errors.UnknownTransactionalId: kafka_errors.InvalidProducerIdMappingError,
    errors.TransactionConflict: kafka_errors.ConcurrentTransactionsError,
    errors.InvalidTransactionTimeout: kafka_errors.InvalidTransactionTimeoutError,
    errors.OutOfOrderSequence: kafka_errors.OutOfOrderSequenceNumberError,
    errors.TransactionTooLarge: kafka_errors.MessageSizeTooLargeError,
    errors.OpenTransactionsFull: kafka_errors.ThrottlingQuotaExceededError,
    errors.SendWindowsFull: kafka_errors.ThrottlingQuotaExceededError,
    errors.TooManyConsumerGroups: kafka_errors.ThrottlingQuotaExceededError,
}


def kafka_code(error: errors.BrokerError, *, group: bool = False) -> int:
    """The Kafka error code answering ``error``; ``group``: the request was about a consumer group (its access refusal
    is GROUP_AUTHORIZATION_FAILED)."""
    if group and isinstance(error, errors.AccessDenied):
        return int(kafka_errors.GroupAuthorizationFailedError.errno)
    for cls in type(error).__mro__:
        if cls in CODES:
            return int(CODES[cls].errno)
    return int(kafka_errors.UnknownError.errno)


def error_of(exc: Exception, *, group: bool = False) -> int:
    """The Kafka error code a handler answers for ``exc``: a KafkaRefusal's own, a BrokerError's ``kafka_code``;
    anything else is raised again (a handler's bug, answered UNKNOWN_SERVER_ERROR by the dispatcher)."""
    if isinstance(exc, KafkaRefusal):
        return exc.error_code
    if isinstance(exc, errors.BrokerError):
        return kafka_code(exc, group=group)
    raise exc
