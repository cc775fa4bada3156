"""Every byte limit counts bytes, pushed past with multi-byte text on a real broker (issue 42).

A limit counted in characters lets four times its bytes in when the text is emoji: a property of 4.19M emoji passed
the 4 MiB message limit as a 16.8 MB record. Each limit documented in bytes is pushed here with text whose
characters fit and whose bytes do not: a half message and each of its companions (``also``), a producer
transaction's messages. The limits meant in characters (a tag, a nack's reason) take that many emoji and refuse one
more. The console's login takes text that is no token as no token (401), not as a 500.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.support.auth import write_auth_file

from .support import ModuleBrokerFactory, assert_problem, stores_nothing

EMOJI = "\N{GRINNING FACE}"  # one character, four bytes of UTF-8
OVER_1_KIB = {"note": EMOJI * 300}  # 300 characters, 1,200 bytes


@pytest.fixture(scope="module")
def small(module_broker_factory: ModuleBrokerFactory) -> Iterator[httpx.Client]:
    """A broker whose messages are at most 1 KiB."""
    broker = module_broker_factory({"HALFMQ_BROKER_MAX_MESSAGE_SIZE": "1024"})
    with httpx.Client(base_url=broker.url, timeout=15) as client:
        for topic in ("ORDERS", "DUE"):
            client.post("/v1/topics", json={"name": topic, "queues": 1}).raise_for_status()
        yield client


def half(message: dict, also: list[dict] | None = None) -> dict:
    return {"producer_group": "pg", "topic": "ORDERS", "message": message, **({"also": also} if also else {})}


def test_a_half_message_is_measured_in_bytes(small: httpx.Client) -> None:
    with stores_nothing(small):
        refused = small.post("/v1/transactions", json=half({"body": "x", "properties": OVER_1_KIB}))
        assert assert_problem(refused, 413, "MESSAGE_TOO_LARGE")["limit"] == 1024
    assert small.post("/v1/transactions", json=half({"body": "x", "properties": {"note": EMOJI * 200}})).status_code == 200


def test_each_companion_of_a_half_is_measured_in_bytes_and_refusing_one_stores_none(small: httpx.Client) -> None:
    companion = {"topic": "DUE", "body": "x", "properties": OVER_1_KIB}
    with stores_nothing(small):
        refused = small.post("/v1/transactions", json=half({"body": "x"}, [{"topic": "DUE", "body": "fine"}, companion]))
        assert_problem(refused, 413, "MESSAGE_TOO_LARGE")


def test_a_plain_send_is_measured_in_bytes(small: httpx.Client) -> None:
    with stores_nothing(small):
        assert_problem(small.post("/v1/topics/ORDERS/messages", json={"messages": [{"body": "x", "properties": OVER_1_KIB}]}),
                       413, "MESSAGE_TOO_LARGE")


def test_a_producer_transaction_is_measured_in_bytes(module_broker_factory: ModuleBrokerFactory) -> None:
    broker = module_broker_factory({"HALFMQ_BROKER_PRODUCER_TXN_MAX_BYTES": "4096"})
    with httpx.Client(base_url=broker.url, timeout=15) as client:
        init = client.post("/v1/transactional-ids/tid/init", json={}).json()
        fence = {"producer_id": init["producer_id"], "epoch": init["epoch"]}
        client.post("/v1/transactional-ids/tid/begin", json={**fence, "sequence": 0}).raise_for_status()

        def add(sequence: int, note: str) -> httpx.Response:
            return client.post("/v1/transactional-ids/tid/messages", json={
                **fence, "sequence": sequence, "messages": [{"topic": "OUT", "body": "x", "properties": {"note": note}}]})

        refused = add(1, EMOJI * 1010)  # 1,010 characters, 4,040 bytes: with its record's header, over 4,096
        assert assert_problem(refused, 413, "TRANSACTION_TOO_LARGE")["max_bytes"] == 4096
        assert add(1, EMOJI * 900).status_code == 200, "3,600 bytes fit"


@pytest.fixture(scope="module")
def plain(module_broker_factory: ModuleBrokerFactory) -> Iterator[httpx.Client]:
    """A broker with the default limits."""
    with httpx.Client(base_url=module_broker_factory().url, timeout=15) as client:
        client.post("/v1/topics", json={"name": "DUE", "queues": 1}).raise_for_status()
        yield client


def test_a_tag_and_a_nack_reason_count_characters_as_documented(plain: httpx.Client) -> None:
    small = plain
    assert small.post("/v1/topics/DUE/messages", json={"messages": [{"body": "x", "tag": EMOJI * 255}]}).status_code == 200
    assert_problem(small.post("/v1/topics/DUE/messages", json={"messages": [{"body": "x", "tag": EMOJI * 256}]}), 400, "INVALID_REQUEST")

    [delivered] = small.post("/v1/consumer-groups/readers/topics/DUE/receive", json={"max_messages": 1}).json()["messages"]
    nack = "/v1/consumer-groups/readers/topics/DUE/nack"
    too_long = small.post(nack, json={"receipt_handles": [delivered["receipt_handle"]], "reason": EMOJI * 257})
    assert too_long.status_code == 400, too_long.text
    assert small.post(nack, json={"receipt_handles": [delivered["receipt_handle"]], "reason": EMOJI * 256}).json()["results"][0]["status"] == "OK"
    journey = small.get(f"/v1/messages/{delivered['msg_id']}").json()
    assert [e["detail"] for e in journey["events"] if e["kind"] == "nacked"] == [EMOJI * 256], journey["events"]


def test_the_console_takes_text_that_is_no_token_as_no_token(module_broker_factory: ModuleBrokerFactory, tmp_path_factory) -> None:
    auth = tmp_path_factory.mktemp("auth") / "auth.json"
    write_auth_file(auth)
    broker = module_broker_factory({"HALFMQ_BROKER_AUTH_FILE": str(auth)})
    with httpx.Client(base_url=broker.url, timeout=15) as client:
        for token in (EMOJI * 40, "\u20ac" * 100):
            answer = client.post("/console/login", data={"token": token})
            assert answer.status_code == 401, (answer.status_code, answer.text[:200])
            assert "ASCII" in answer.text
