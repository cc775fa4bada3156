"""The one table from halfmq's typed errors to RocketMQ 5 status codes."""

from __future__ import annotations

import pytest

pb = pytest.importorskip("rocketmq.grpc_protocol.definition_pb2")

from halfmq import errors  # noqa: E402
from halfmq.broker.grpc_front.status_codes import RocketMQRefusal, code_of, status_of  # noqa: E402


@pytest.mark.parametrize(("error", "code"), [
    (errors.TopicNotFound("t"), pb.Code.TOPIC_NOT_FOUND),
    (errors.InvalidReceiptHandle("h"), pb.Code.INVALID_RECEIPT_HANDLE),
    (errors.MessageTooLarge("m"), pb.Code.MESSAGE_BODY_TOO_LARGE),
    (errors.TransactionNotFound("x"), pb.Code.INVALID_TRANSACTION_ID),
    (errors.AccessDenied("x"), pb.Code.FORBIDDEN),
    (errors.Unauthenticated("x"), pb.Code.UNAUTHORIZED),
    (errors.InvalidTopicName("x"), pb.Code.ILLEGAL_TOPIC),
    (errors.InvalidMessageGroup("x"), pb.Code.ILLEGAL_MESSAGE_GROUP),
    (errors.InvalidDeliveryTime("x"), pb.Code.ILLEGAL_DELIVERY_TIME),
    (errors.MalformedJson("x"), pb.Code.BAD_REQUEST),  # no row of its own: its parent InvalidRequest's
    (RocketMQRefusal(pb.Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, "fifo"), pb.Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE),
])
def test_each_error_maps_to_the_most_specific_rocketmq_code(error: errors.BrokerError, code: int) -> None:
    assert code_of(error) == code


def test_every_halfmq_error_class_gets_a_rocketmq_code_that_is_not_ok() -> None:
    classes = [c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, errors.BrokerError)]
    assert all(code_of(c("x")) not in (pb.Code.OK, pb.Code.CODE_UNSPECIFIED) for c in classes)


def test_the_status_message_carries_halfmqs_stable_code() -> None:
    assert status_of(errors.TopicNotFound("topic 'x' does not exist")).message == "TOPIC_NOT_FOUND: topic 'x' does not exist"


def test_a_refusing_store_and_a_flush_timeout_answer_as_their_typed_errors_and_a_bug_as_none() -> None:
    from halfmq.broker.grpc_front.status_codes import broker_error_of
    from halfmq.broker.store.flush_waiter import FlushTimedOut
    from halfmq.broker.store.message_store import StoreNotWritable

    assert code_of(broker_error_of(StoreNotWritable("disk full"))) == pb.Code.INTERNAL_SERVER_ERROR
    assert code_of(broker_error_of(FlushTimedOut("slow disk"))) == pb.Code.MASTER_PERSISTENCE_TIMEOUT
    assert broker_error_of(KeyError("bug")) is None
