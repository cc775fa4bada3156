"""halfmq's typed errors as RocketMQ 5 status codes: the one table both directions of the gRPC front use.

The most specific class wins (the table is searched along the error's MRO), so a
new subclass of InvalidRequest answers BAD_REQUEST until it is given its own row.
"""

from __future__ import annotations

from rocketmq.grpc_protocol import definition_pb2 as pb

from halfmq import errors

CODES: dict[type[errors.BrokerError], int] = {
    errors.InvalidRequest: pb.Code.BAD_REQUEST,
    errors.InvalidTopicName: pb.Code.ILLEGAL_TOPIC,
    errors.SystemTopicForbidden: pb.Code.ILLEGAL_TOPIC,
    errors.InvalidGroupName: pb.Code.ILLEGAL_CONSUMER_GROUP,
    errors.ReservedProperty: pb.Code.ILLEGAL_MESSAGE_PROPERTY_KEY,
    errors.InvalidProperty: pb.Code.ILLEGAL_MESSAGE_PROPERTY_KEY,
    errors.InvalidMessageGroup: pb.Code.ILLEGAL_MESSAGE_GROUP,
    errors.InvalidDeliveryTime: pb.Code.ILLEGAL_DELIVERY_TIME,
    errors.InvalidTagFilter: pb.Code.ILLEGAL_FILTER_EXPRESSION,
    errors.InvalidReceiptHandle: pb.Code.INVALID_RECEIPT_HANDLE,
    errors.ReceiptNotHeld: pb.Code.INVALID_RECEIPT_HANDLE,
    errors.ReceiptInOtherTransaction: pb.Code.PRECONDITION_FAILED,  # acked in an open producer transaction
    errors.RecallTooLate: pb.Code.ILLEGAL_DELIVERY_TIME,  # due already; a code Apache's clients raise as a bad request
    errors.MessageTooLarge: pb.Code.MESSAGE_BODY_TOO_LARGE,
    errors.PropertiesTooLarge: pb.Code.MESSAGE_PROPERTIES_TOO_LARGE,
    errors.TooManyKeys: pb.Code.ILLEGAL_MESSAGE_KEY,
    errors.RequestTooLarge: pb.Code.PAYLOAD_TOO_LARGE,
    errors.TopicNotFound: pb.Code.TOPIC_NOT_FOUND,
    errors.ConsumerGroupNotFound: pb.Code.CONSUMER_GROUP_NOT_FOUND,
    errors.TransactionNotFound: pb.Code.INVALID_TRANSACTION_ID,
    errors.ProducerGroupMismatch: pb.Code.INVALID_TRANSACTION_ID,
    errors.TransactionConflict: pb.Code.PRECONDITION_FAILED,
    errors.Unauthenticated: pb.Code.UNAUTHORIZED,
    errors.AccessDenied: pb.Code.FORBIDDEN,
    errors.TooManyTelemetryStreams: pb.Code.TOO_MANY_REQUESTS,
    errors.TooManyProducerIds: pb.Code.TOO_MANY_REQUESTS,
    errors.TooManyConsumerGroups: pb.Code.TOO_MANY_REQUESTS,
    errors.SendWindowsFull: pb.Code.TOO_MANY_REQUESTS,
    errors.FlushDiskTimeout: pb.Code.MASTER_PERSISTENCE_TIMEOUT,
    errors.StoreUnavailable: pb.Code.INTERNAL_SERVER_ERROR,
    errors.BrokerUnavailable: pb.Code.INTERNAL_SERVER_ERROR,
    errors.DamagedRecord: pb.Code.MESSAGE_CORRUPTED,
    errors.BrokerError: pb.Code.INTERNAL_SERVER_ERROR,
}


class RocketMQRefusal(errors.InvalidRequest):
    """A request the RocketMQ protocol itself refuses, with its own code (a message type its properties contradict)."""

    code = "ROCKETMQ_REFUSED"

    def __init__(self, rocketmq_code: int, detail: str) -> None:
        super().__init__(detail)
        self.rocketmq_code = rocketmq_code


def broker_error_of(exc: Exception) -> errors.BrokerError | None:
    """The typed error an exception stands for (a refusing store, a flush that timed out); None for a bug."""
    from halfmq.broker.usecases.errors import as_broker_error

    return as_broker_error(exc)


def code_of(error: errors.BrokerError) -> int:
    if isinstance(error, RocketMQRefusal):
        return error.rocketmq_code
    for cls in type(error).__mro__:
        if cls in CODES:
            return CODES[cls]
    return pb.Code.INTERNAL_SERVER_ERROR


def status_of(error: errors.BrokerError) -> pb.Status:
    return pb.Status(code=code_of(error), message=f"{error.code}: {error.detail}")


OK = pb.Status(code=pb.Code.OK, message="OK")
