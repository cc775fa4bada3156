"""The operators' calls (halfmq.client.admin): each is data (method, path, query) whose answer decodes to its route's wire
struct, checked without HTTP; then the client on local servers standing for a set's nodes: a read a follower serves is
answered there, a write goes to the leader a 421 names, ``answered_by`` says which node spoke, and an action the broker
may have done is never repeated behind the operator's back."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import msgspec
import pytest
from aiohttp import web

from halfmq import wire
from halfmq.client import endpoints
from halfmq.client.admin import AsyncAdminClient
from halfmq.client.endpoints import Call
from halfmq.errors import BrokerUnavailable, TransactionNotFound
from tests.support.cluster_answers import LEADER_ANSWER

MESSAGE = {"msg_id": "M1", "topic": "ORDERS", "queue_id": 0, "queue_offset": 3, "commit_log_offset": 96, "born_timestamp": 1,
           "store_timestamp": 2, "body": "order 42", "properties": {"REAL_TOPIC": "ORDERS"}}
VIEW = {"transaction_id": "T/1", "producer_group": "pg", "state": "pending", "check_times": 2, "born_timestamp": 1, "age_seconds": 9.5,
        "last_answer": "UNKNOWN", "next_check_timestamp": 5, "message": MESSAGE}
TOPIC = {"name": "ORDERS", "queues": [{"queue_id": 0, "min_offset": 0, "max_offset": 4}]}
GROUP = {"group": "billing", "topics": ["ORDERS"], "lag": 4, "in_flight": 1, "retrying": 0, "dlq_depth": 2}
PAGE = {"first": 0, "last": 0, "shown": 1, "depth": 1, "previous": None, "next": None}
TID = {"transactional_id": "copier", "producer_id": 7, "epoch": 1, "state": "ONGOING", "transaction_timeout_ms": 60000, "transaction": 3,
       "open": {"transaction": 3, "age_seconds": 1.5, "deadline_timestamp": 9, "messages": 2, "acks": 0}}
ENDED = {"transactional_id": "copier", "producer_id": 7, "epoch": 1, "transaction": 3, "state": "COMPLETE_ABORT", "messages": 2, "acks": 0,
         "aborted_by": "operator"}
SUMMARY = {"msg_id": "M1", "topic": "ORDERS", "queue_id": 0, "commit_log_offset": 96, "store_timestamp": 2, "queue_offset": 3}

# (the call, its method and path, its query, an answer as the broker writes it, the struct it decodes to)
CALLS: list[tuple[Call[Any], str, str, dict[str, Any] | None, Any, type]] = [
    (endpoints.transaction_list("discarded", 10), "GET", "/v1/transactions", {"state": "discarded", "limit": 10},
     {"state": "discarded", "count": 1, "transactions": [VIEW]}, wire.TransactionList),
    (endpoints.transaction("T/1"), "GET", "/v1/transactions/T%2F1", None, VIEW, wire.TransactionView),
    (endpoints.operate_transaction("T/1", "force-commit"), "POST", "/v1/transactions/T%2F1/force-commit", None, VIEW, wire.TransactionView),
    (endpoints.operate_transaction("T1", "force-rollback"), "POST", "/v1/transactions/T1/force-rollback", None, VIEW, wire.TransactionView),
    (endpoints.operate_transaction("T1", "recheck"), "POST", "/v1/transactions/T1/recheck", None, VIEW, wire.TransactionView),
    (endpoints.operate_transaction("T1", "resend"), "POST", "/v1/transactions/T1/resend", None, VIEW, wire.TransactionView),
    (endpoints.topic_list(), "GET", "/v1/topics", None, {"topics": [TOPIC]}, wire.TopicList),
    (endpoints.get_topic("%DLQ%billing"), "GET", "/v1/topics/%25DLQ%25billing", None, TOPIC, wire.TopicInfo),
    (endpoints.group_list(), "GET", "/v1/consumer-groups", None, {"count": 1, "groups": [GROUP]}, wire.GroupList),
    (endpoints.group_list(system=True), "GET", "/v1/consumer-groups", {"system": "true"}, {"count": 1, "groups": [GROUP]}, wire.GroupList),
    (endpoints.dead_letters("a/b", 50, 25), "GET", "/v1/consumer-groups/a%2Fb/dlq", {"offset": 50, "max": 25},
     {"group": "a/b", "depth": 1, "messages": [MESSAGE], "page": PAGE}, wire.DeadLetters),
    (endpoints.resend_dead_letter("billing", 7), "POST", "/v1/consumer-groups/billing/dlq/7/resend", None,
     {"group": "billing", "dlq_offset": 7, "msg_id": "M2", "topic": "ORDERS", "queue_id": 0, "queue_offset": 9, "commit_log_offset": 512},
     wire.DlqResent),
    (endpoints.producer_list(), "GET", "/v1/producers", None,
     {"groups": [{"producer_group": "pg", "producers": [{"client_id": "c1", "check_url": "http://o/check", "last_heartbeat_timestamp": 3}]}]},
     wire.ProducerList),
    (endpoints.transactional_id_list(), "GET", "/v1/transactional-ids", None, {"count": 1, "transactional_ids": [TID]},
     wire.TransactionalIdList),
    (endpoints.force_abort("copier"), "POST", "/v1/transactional-ids/copier/force-abort", None, ENDED, wire.TxnEndResult),
    (endpoints.message_search("order-42", 0, 50, "ORDERS"), "GET", "/v1/messages", {"key": "order-42", "since": 0, "limit": 50, "topic": "ORDERS"},
     {"key": "order-42", "messages": [SUMMARY]}, wire.MessageSearch),
    (endpoints.cluster_view(), "GET", "/v1/cluster", None, LEADER_ANSWER, wire.ClusterView),
    (endpoints.health_report(), "GET", "/healthz", None, {"status": "ok", "commit_log_end_offset": 96, "flushed_offset": 96}, wire.Health),
]


@pytest.mark.parametrize(("call", "method", "path", "params", "answer", "shape"), CALLS, ids=[f"{c[1]} {c[2]}" for c in CALLS])
def test_each_operator_call_is_its_route_and_query_and_decodes_the_answer_to_the_routes_wire_struct(
        call: Call[Any], method: str, path: str, params: dict[str, Any] | None, answer: Any, shape: type) -> None:
    assert (call.method, call.path, call.params, call.body) == (method, path, params, None)
    decoded = call.parse(answer)
    assert type(decoded) is shape
    assert msgspec.to_builtins(decoded) == msgspec.to_builtins(wire.decode(msgspec.to_builtins(decoded), shape))  # the same again


def test_a_transaction_view_keeps_what_the_broker_wrote_and_the_transaction_producers_reading_stays_a_dict() -> None:
    view = endpoints.transaction("T/1").parse(VIEW)
    assert (view.state, view.check_times, view.message.properties) == (wire.TransactionState.PENDING, 2, {"REAL_TOPIC": "ORDERS"})
    legacy = endpoints.get_transaction("T/1")
    assert (legacy.method, legacy.path) == ("GET", "/v1/transactions/T%2F1") and legacy.parse(VIEW) is VIEW


def test_an_operator_verb_outside_the_four_is_refused_before_any_request() -> None:
    with pytest.raises(ValueError, match="force-commit"):
        endpoints.operate_transaction("T1", "delete")  # type: ignore[arg-type]


# --- the client on local servers: a set of two nodes, a follower (listed first) and the leader ----------------------------

class Node:
    """A node that answers the reads a follower serves itself and a 421 naming ``leader`` for the rest, unless it leads."""

    def __init__(self, leads: bool) -> None:
        self.leads = leads
        self.url = self.leader = ""
        self.asked: list[str] = []
        self.answer: Callable[[web.Request], web.Response] | None = None  # a test's own answer to the next request

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.asked.append(f"{request.method} {request.path}")
        if self.answer is not None:
            return self.answer(request)
        if request.path == "/v1/topics" and request.method == "GET":  # on_follower: any node answers
            return web.json_response({"topics": [{"name": self.url, "queues": []}]})
        if not self.leads:
            return web.json_response({"code": "NOT_LEADER", "status": 421, "title": "not the leader", "detail": "follows",
                                      "leader_url": self.leader}, status=421, content_type="application/problem+json")
        if request.path == "/v1/topics":
            return web.json_response({"name": (await request.json())["name"], "queues": []}, status=201)
        if request.path == "/v1/transactions/T1":
            return web.json_response({"code": "TRANSACTION_NOT_FOUND", "status": 404, "title": "no", "detail": "no transaction 'T1'"},
                                     status=404, content_type="application/problem+json")
        return web.json_response({"code": "NOT_FOUND", "status": 404, "title": "No such resource", "detail": request.path},
                                 status=404, content_type="application/problem+json")


@pytest.fixture
async def set_of_two() -> AsyncIterator[tuple[Node, Node]]:
    follower, leader = Node(leads=False), Node(leads=True)
    runners = []
    for node in (follower, leader):
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", node.handle)
        runner = web.AppRunner(app, shutdown_timeout=0.1)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        node.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
        runners.append(runner)
    follower.leader = leader.url
    yield follower, leader
    for runner in runners:
        await runner.cleanup()


async def test_a_read_a_follower_serves_is_answered_there_and_a_write_by_the_leader_its_421_names(set_of_two: tuple[Node, Node]) -> None:
    follower, leader = set_of_two
    async with AsyncAdminClient(f"{follower.url},{leader.url}", retries=0) as admin:
        assert admin.answered_by is None and admin.urls == [follower.url, leader.url]
        assert [t.name for t in (await admin.list_topics()).topics] == [follower.url]
        assert admin.answered_by == follower.url
        created = await admin.create_topic("PAYMENTS", 4)
        assert created.name == "PAYMENTS" and admin.answered_by == leader.url
        assert follower.asked == ["GET /v1/topics", "POST /v1/topics"] and leader.asked == ["POST /v1/topics"]


async def test_a_refusal_names_the_node_that_refused_and_a_single_broker_has_no_set_to_describe(set_of_two: tuple[Node, Node]) -> None:
    follower, leader = set_of_two
    async with AsyncAdminClient(f"{follower.url},{leader.url}", retries=0) as admin:
        with pytest.raises(TransactionNotFound):
            await admin.describe_transaction("T1")
        assert admin.answered_by == leader.url
    async with AsyncAdminClient(leader.url, retries=0) as single:
        assert await single.describe_cluster() is None  # (a broker not in a set answers 404 to GET /v1/cluster)


def _cut_off(request: web.Request) -> web.Response:
    """The connection closed under the request: it was sent and got no answer (it may have been done)."""
    assert request.transport is not None
    request.transport.close()
    return web.Response()


async def test_an_action_that_may_have_been_done_is_not_repeated_and_a_read_is(set_of_two: tuple[Node, Node]) -> None:
    _, leader = set_of_two
    leader.answer = _cut_off
    async with AsyncAdminClient(leader.url, retries=2) as admin:
        with pytest.raises(BrokerUnavailable) as acting:
            await admin.force_commit("T1")
        assert acting.value.sent and "attempts" not in acting.value.detail
        assert leader.asked == ["POST /v1/transactions/T1/force-commit"]
        with pytest.raises(BrokerUnavailable) as reading:
            await admin.list_groups()
        assert reading.value.detail.endswith("after 3 attempts")
