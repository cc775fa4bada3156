"""With auth on, RocketMQ clients sign as a halfmq principal: the same policies over both fronts."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import grpc
import httpx
import pytest
from rocketmq import ClientConfiguration, Credentials, FilterExpression, Producer, SimpleConsumer, TransactionChecker
from rocketmq import TransactionResolution as Resolution
from rocketmq.grpc_protocol import definition_pb2 as pb
from rocketmq.grpc_protocol import service_pb2 as spb
from rocketmq.grpc_protocol import service_pb2_grpc as rpc
from rocketmq.v5.util.signature import Signature

from halfmq.broker.security.auth_file import AuthFile, PolicyEntry, PrincipalEntry, derive_rocketmq_secret
from tests.support.auth import bearer

from .conftest import RmqBroker, message

pytestmark = pytest.mark.slow

RIGHTS = {
    "admin": [(["admin"], ["*"])],
    "shop": [(["publish"], ["topic:orders", "group:orders"]), (["subscribe"], ["topic:orders", "group:billing"])],
    "mallory": [(["publish", "subscribe"], ["topic:mallory", "group:mallory"])],
}


class Commit(TransactionChecker):
    def check(self, message):
        return Resolution.COMMIT


@pytest.fixture
def secured(start_rmq_broker, tmp_path: Path) -> tuple[RmqBroker, AuthFile, dict[str, str]]:
    auth = AuthFile(principals=[PrincipalEntry(name=n, policies=[PolicyEntry(actions=a, resources=r) for a, r in p]) for n, p in RIGHTS.items()])
    tokens = {name: auth.add_token(name) for name in RIGHTS}
    auth.save(tmp_path / "auth.json")
    broker = start_rmq_broker({"HALFMQ_BROKER_AUTH_FILE": str(tmp_path / "auth.json")})
    httpx.post(f"{broker.url}/v1/topics", json={"name": "orders", "queues": 2}, headers=bearer(tokens["admin"])).raise_for_status()
    return broker, auth, tokens


def config(broker: RmqBroker, auth: AuthFile, name: str) -> ClientConfiguration:
    return ClientConfiguration(broker.endpoint, Credentials(name, derive_rocketmq_secret(auth.check_secret_key, name)))


def signed(auth: AuthFile | None, name: str, secret: str | None = None) -> list[tuple[str, str]]:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    sk = secret if secret is not None else derive_rocketmq_secret(auth.check_secret_key, name)
    return [("x-mq-date-time", stamp), ("authorization", f"MQv2-HMAC-SHA1 Credential={name}, SignedHeaders=x-mq-date-time, "
                                                         f"Signature={Signature.sign(sk, stamp)}")]


def commit_log_end(broker: RmqBroker, token: str) -> float:
    text = httpx.get(f"{broker.url}/metrics", headers=bearer(token)).text
    return float(re.search(r"^halfmq_commit_log_end_offset (\S+)$", text, re.M).group(1))


def send(stub, metadata) -> spb.SendMessageResponse:
    sp = pb.SystemProperties(message_id="0102FC00000001000000000000000009", message_type=pb.MessageType.NORMAL)
    return stub.SendMessage(spb.SendMessageRequest(messages=[pb.Message(topic=pb.Resource(name="orders"), system_properties=sp, body=b"x")]),
                            metadata=metadata)


def test_a_signed_principal_sends_transactionally_and_consumes_and_its_http_token_reaches_the_same_topic(secured, started) -> None:
    broker, auth, tokens = secured
    producer = started(Producer(config(broker, auth, "shop"), ("orders",), Commit()))
    tx = producer.begin_transaction()
    producer.send(message("orders", b"signed-order"), tx)
    tx.commit()
    httpx.post(f"{broker.url}/v1/topics/orders/messages", json={"messages": [{"body": "http-order"}]},
               headers=bearer(tokens["shop"])).raise_for_status()
    consumer = started(SimpleConsumer(config(broker, auth, "shop"), "billing", {"orders": FilterExpression()}, await_duration=1))
    got = []
    for _ in range(3):
        for m in consumer.receive(16, 30):
            got.append(m.body)
            consumer.ack(m)
    assert sorted(got) == [b"http-order", b"signed-order"]


def test_unsigned_badly_signed_and_unpermitted_calls_are_refused_and_write_nothing(secured) -> None:
    broker, auth, tokens = secured
    before = commit_log_end(broker, tokens["admin"])
    with grpc.insecure_channel(broker.endpoint) as channel:
        stub = rpc.MessagingServiceStub(channel)
        assert send(stub, []).status.code == pb.Code.UNAUTHORIZED
        assert send(stub, signed(auth, "shop", secret="guessed")).status.code == pb.Code.UNAUTHORIZED
        assert send(stub, signed(auth, "nobody", secret="x")).status.code == pb.Code.UNAUTHORIZED
        assert send(stub, signed(auth, "mallory")).status.code == pb.Code.FORBIDDEN
        route = stub.QueryRoute(spb.QueryRouteRequest(topic=pb.Resource(name="orders")), metadata=[])
        assert route.status.code == pb.Code.UNAUTHORIZED
        [telemetry] = list(stub.Telemetry(iter([spb.TelemetryCommand()]), metadata=[]))
        assert telemetry.status.code == pb.Code.UNAUTHORIZED
        queue = pb.MessageQueue(topic=pb.Resource(name="orders"), id=-1)
        answers = list(stub.ReceiveMessage(spb.ReceiveMessageRequest(group=pb.Resource(name="billing"), message_queue=queue, batch_size=4),
                                           metadata=signed(auth, "mallory")))
        assert [a.status.code for a in answers] == [pb.Code.FORBIDDEN]
        assert commit_log_end(broker, tokens["admin"]) == before
        assert send(stub, signed(auth, "shop")).status.code == pb.Code.OK  # the same call, signed by who may
    assert commit_log_end(broker, tokens["admin"]) > before


def test_only_a_principal_that_may_send_to_the_topic_recalls_over_grpc(secured) -> None:
    broker, auth, tokens = secured
    sp = pb.SystemProperties(message_id="0102FC00000001000000000000000010", message_type=pb.MessageType.DELAY)
    sp.delivery_timestamp.FromMilliseconds(int(datetime.now(UTC).timestamp() * 1000) + 60_000)
    with grpc.insecure_channel(broker.endpoint) as channel:
        stub = rpc.MessagingServiceStub(channel)
        sent = stub.SendMessage(spb.SendMessageRequest(messages=[pb.Message(topic=pb.Resource(name="orders"), system_properties=sp,
                                                                            body=b"later")]), metadata=signed(auth, "shop"))
        [entry] = sent.entries
        request = spb.RecallMessageRequest(topic=pb.Resource(name="orders"), recall_handle=entry.recall_handle)
        before = commit_log_end(broker, tokens["admin"])
        assert stub.RecallMessage(request, metadata=[]).status.code == pb.Code.UNAUTHORIZED
        assert stub.RecallMessage(request, metadata=signed(auth, "mallory")).status.code == pb.Code.FORBIDDEN
        assert commit_log_end(broker, tokens["admin"]) == before
        recalled = stub.RecallMessage(request, metadata=signed(auth, "shop"))
        assert (recalled.status.code, recalled.message_id) == (pb.Code.OK, entry.message_id)
    assert commit_log_end(broker, tokens["admin"]) > before
