"""Producer transactions over HTTP against real broker processes: fencing, acks, bad input, kill -9, timeout."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter

import httpx
import pytest

from tests.support.processes import BrokerProcess

from .http_helpers import path, read_all, receive


class Txn:
    """A raw-HTTP transactional producer (deliberately not the SDK: the API itself is pinned)."""

    def __init__(self, client: httpx.Client, tid: str, timeout_ms: int | None = None) -> None:
        self.client, self.tid = client, tid
        body = {} if timeout_ms is None else {"transaction_timeout_ms": timeout_ms}
        answer = self.post("init", body, raw=True)
        self.producer_id, self.epoch = answer["producer_id"], answer["epoch"]
        self.sequence = 0

    def post(self, verb: str, body: dict, raw: bool = False) -> dict:
        if not raw:
            body = {"producer_id": self.producer_id, "epoch": self.epoch, **body}
        resp = self.client.post(path("v1", "transactional-ids", self.tid, verb), json=body)
        if resp.status_code != 200:
            raise Problem(resp)
        return resp.json()

    def begin(self) -> dict:
        self.sequence = 0
        return self.post("begin", {"sequence": 0})

    def send(self, topic: str, *bodies: str) -> dict:
        self.sequence += 1
        return self.post("messages", {"sequence": self.sequence, "messages": [{"topic": topic, "body": b} for b in bodies]})

    def ack(self, handles: list[str]) -> dict:
        self.sequence += 1
        return self.post("acks", {"sequence": self.sequence, "receipt_handles": handles})

    def commit(self) -> dict:
        return self.post("commit", {})

    def abort(self) -> dict:
        return self.post("abort", {})


class Problem(Exception):
    def __init__(self, resp: httpx.Response) -> None:
        super().__init__(resp.text)
        self.status = resp.status_code
        self.code = resp.json().get("code")
        self.content_type = resp.headers.get("content-type")


def bodies(client: httpx.Client, topic: str, queues: int = 1) -> list[str]:
    return sorted(m["body"] for q in range(queues) for m in read_all(client, topic, q))


@pytest.fixture
def client(broker: BrokerProcess):
    with httpx.Client(base_url=broker.url, timeout=10) as c:
        c.post("/v1/topics", json={"name": "IN", "queues": 1}).raise_for_status()
        c.post("/v1/topics", json={"name": "OUT", "queues": 2}).raise_for_status()
        yield c


def test_messages_to_several_topics_appear_only_on_commit_and_a_repeat_commit_answers_the_same(client: httpx.Client) -> None:
    t = Txn(client, "copier-1")
    t.begin()
    t.send("OUT", "a", "b")
    t.send("IN", "c")
    assert bodies(client, "OUT", 2) == [] and bodies(client, "IN") == []
    first = t.commit()
    assert first["state"] == "COMPLETE_COMMIT" and first["messages"] == 3
    assert bodies(client, "OUT", 2) == ["a", "b"] and bodies(client, "IN") == ["c"]
    again = t.commit()
    assert again["duplicate"] is True and again["results"] == first["results"]
    metrics = client.get("/metrics").text
    assert "halfmq_producer_transaction_commits_total 1.0" in metrics and "halfmq_producer_transactions_open 0.0" in metrics
    listing = client.get("/v1/transactional-ids").json()
    assert [(x["transactional_id"], x["state"], x["open"]) for x in listing["transactional_ids"]] == [("copier-1", "COMPLETE_COMMIT", None)]


def test_a_second_init_fences_the_first_and_the_zombie_changes_nothing(client: httpx.Client) -> None:
    zombie = Txn(client, "copier")
    zombie.begin()
    zombie.send("OUT", "from-zombie")
    fresh = Txn(client, "copier")
    assert fresh.epoch == zombie.epoch + 1 and fresh.producer_id == zombie.producer_id
    for request in (zombie.commit, lambda: zombie.send("OUT", "more"), zombie.begin, zombie.abort):
        with pytest.raises(Problem) as info:
            request()
        assert (info.value.status, info.value.code) == (409, "PRODUCER_FENCED")
    fresh.begin()
    fresh.send("OUT", "from-fresh")
    fresh.commit()
    assert bodies(client, "OUT", 2) == ["from-fresh"]


def test_a_plain_ack_of_a_delivery_an_open_transaction_has_acked_is_409_and_the_abort_still_gives_it_back(client: httpx.Client) -> None:
    client.post(path("v1", "topics", "IN", "messages"), json={"messages": [{"body": "m0"}]}).raise_for_status()
    [got] = receive(client, "g", "IN", n=1)
    t = Txn(client, "copier")
    t.begin()
    t.ack([got["receipt_handle"]])
    plain = client.post(path("v1", "consumer-groups", "g", "topics", "IN", "ack"), json={"receipt_handles": [got["receipt_handle"]]})
    assert (plain.status_code, plain.json()["code"]) == (409, "RECEIPT_IN_TRANSACTION"), plain.text
    assert plain.headers["content-type"].startswith("application/problem+json")
    t.abort()
    assert [m["body"] for m in receive(client, "g", "IN", n=10)] == ["m0"]  # the plain ack had settled nothing


def test_acks_in_a_transaction_are_invisible_while_open_applied_on_commit_and_redelivered_on_abort(client: httpx.Client) -> None:
    client.post(path("v1", "topics", "IN", "messages"), json={"messages": [{"body": f"m{i}"} for i in range(4)]}).raise_for_status()
    got = receive(client, "g", "IN", n=2, invisible=1)
    t = Txn(client, "copier")
    t.begin()
    t.send("OUT", *[m["body"].upper() for m in got])
    t.ack([m["receipt_handle"] for m in got])
    info = client.get(path("v1", "transactional-ids", "copier")).json()
    assert info["open"]["messages"] == 2 and info["open"]["acks"] == 2
    time.sleep(1.3)  # past the invisibility: the open transaction still holds them
    assert sorted(m["body"] for m in receive(client, "g", "IN", n=10, invisible=1)) == ["m2", "m3"]
    t.commit()
    time.sleep(1.3)
    redelivered = receive(client, "g", "IN", n=10, invisible=30)
    assert sorted(m["body"] for m in redelivered) == ["m2", "m3"]  # m0, m1 are acked for good

    t.begin()
    t.ack([m["receipt_handle"] for m in redelivered])
    t.abort()
    assert sorted(m["body"] for m in receive(client, "g", "IN", n=10)) == ["m2", "m3"]  # deliverable again at once
    with pytest.raises(Problem) as problem:
        t.commit()
    assert (problem.value.status, problem.value.code) == (409, "TRANSACTION_ABORTED")


def test_a_retried_messages_request_is_stored_once_and_a_gap_is_out_of_order(client: httpx.Client) -> None:
    t = Txn(client, "copier")
    t.begin()
    first = t.send("OUT", "once")
    again = t.post("messages", {"sequence": 1, "messages": [{"topic": "OUT", "body": "once"}]})
    assert again["duplicate"] is True and again["results"] == first["results"]
    with pytest.raises(Problem) as info:
        t.post("messages", {"sequence": 5, "messages": [{"topic": "OUT", "body": "gap"}]})
    assert (info.value.status, info.value.code) == (409, "OUT_OF_ORDER_SEQUENCE")
    t.commit()
    assert bodies(client, "OUT", 2) == ["once"]


BAD_INPUT = [
    ("unknown id", "ghost", "begin", {"producer_id": 1, "epoch": 0, "sequence": 0}, 404, "UNKNOWN_TRANSACTIONAL_ID"),
    ("wrong producer id", "tid", "begin", {"producer_id": 999, "epoch": 0, "sequence": 0}, 409, "INVALID_PRODUCER_EPOCH"),
    ("epoch never issued", "tid", "begin", {"producer_id": "PID", "epoch": 7, "sequence": 0}, 409, "INVALID_PRODUCER_EPOCH"),
    ("commit without begin", "tid", "commit", {"producer_id": "PID", "epoch": 0}, 409, "INVALID_TXN_STATE"),
    ("abort without begin", "tid", "abort", {"producer_id": "PID", "epoch": 0}, 409, "INVALID_TXN_STATE"),
    ("messages without begin", "tid", "messages", {"producer_id": "PID", "epoch": 0, "sequence": 1,
                                                   "messages": [{"topic": "NEWTOPIC", "body": "x"}]}, 409, "INVALID_TXN_STATE"),
    ("timeout too long", "tid", "init", {"transaction_timeout_ms": 900_001}, 400, "INVALID_TRANSACTION_TIMEOUT"),
    ("timeout zero", "tid", "init", {"transaction_timeout_ms": 0}, 400, "INVALID_TRANSACTION_TIMEOUT"),
    ("missing epoch", "tid", "commit", {"producer_id": "PID"}, 400, "INVALID_REQUEST"),
    ("unknown field", "tid", "begin", {"producer_id": "PID", "epoch": 0, "sequence": 0, "extra": 1}, 400, "INVALID_REQUEST"),
    ("malformed receipt", "tid", "acks", {"producer_id": "PID", "epoch": 0, "sequence": 1, "receipt_handles": ["nope"]},
     400, "INVALID_RECEIPT_HANDLE"),
    ("system topic", "tid", "messages", {"producer_id": "PID", "epoch": 0, "sequence": 1,
                                         "messages": [{"topic": "HALFMQ_TXN_STATE", "body": "x"}]}, 403, "SYSTEM_TOPIC_FORBIDDEN"),
]


@pytest.mark.parametrize(("case", "tid", "verb", "body", "status", "code"), BAD_INPUT, ids=[c[0] for c in BAD_INPUT])
def test_bad_input_is_a_4xx_problem_with_a_stable_code_and_changes_nothing(client: httpx.Client, case, tid, verb, body, status, code) -> None:
    t = Txn(client, "tid")
    body = {k: (t.producer_id if v == "PID" else v) for k, v in body.items()}
    before = client.get("/v1/transactional-ids").json()
    topics_before = client.get("/v1/topics").json()
    resp = client.post(path("v1", "transactional-ids", tid, verb), json=body)
    assert (resp.status_code, resp.json()["code"]) == (status, code), resp.text
    assert resp.headers["content-type"].startswith("application/problem+json")
    assert client.get("/v1/transactional-ids").json() == before
    assert client.get("/v1/topics").json() == topics_before


def test_bad_input_inside_an_open_transaction_keeps_the_transaction_as_it_was(client: httpx.Client) -> None:
    client.post(path("v1", "topics", "IN", "messages"), json={"messages": [{"body": "m0"}]}).raise_for_status()
    got = receive(client, "g", "IN", n=1)
    other = Txn(client, "other")
    other.begin()
    other.ack([got[0]["receipt_handle"]])
    t = Txn(client, "tid")
    t.begin()
    t.send("OUT", "kept")
    for body, status, code in (
        ({"sequence": 2, "receipt_handles": [got[0]["receipt_handle"]]}, 409, "RECEIPT_IN_TRANSACTION"),
        ({"sequence": 2, "messages": [{"topic": "OUT", "body": "x" * 10, "queue_id": 9}]}, 400, "INVALID_QUEUE_ID"),
        ({"sequence": 2, "messages": [{"topic": "OUT", "body": "x", "properties": {"TRAN_MSG": "true"}}]}, 400, "RESERVED_PROPERTY"),
    ):
        verb = "acks" if "receipt_handles" in body else "messages"
        with pytest.raises(Problem) as info:
            t.post(verb, body)
        assert (info.value.status, info.value.code) == (status, code)
    view = client.get(path("v1", "transactional-ids", "tid")).json()
    assert view["open"]["messages"] == 1 and view["open"]["acks"] == 0
    t.send("OUT", "next")  # the sequence did not move
    t.commit()
    assert bodies(client, "OUT", 2) == ["kept", "next"]


def test_an_oversized_transaction_is_413_and_stores_nothing(start_broker) -> None:
    broker = start_broker({"HALFMQ_BROKER_PRODUCER_TXN_MAX_MESSAGES": "3"})
    with httpx.Client(base_url=broker.url, timeout=10) as client:
        t = Txn(client, "big")
        t.begin()
        t.send("OUT", "a", "b")
        with pytest.raises(Problem) as info:
            t.send("OUT", "c", "d")
        assert (info.value.status, info.value.code) == (413, "TRANSACTION_TOO_LARGE")
        t.commit()
        assert bodies(client, "OUT", 4) == ["a", "b"]


def test_the_broker_aborts_a_transaction_that_outlives_its_timeout(client: httpx.Client) -> None:
    client.post(path("v1", "topics", "IN", "messages"), json={"messages": [{"body": "m0"}]}).raise_for_status()
    got = receive(client, "g", "IN", n=1, invisible=60)
    t = Txn(client, "slow", timeout_ms=800)
    t.begin()
    t.send("OUT", "late")
    t.ack([got[0]["receipt_handle"]])
    time.sleep(2.0)
    view = client.get(path("v1", "transactional-ids", "slow")).json()
    assert (view["state"], view["aborted_by"]) == ("COMPLETE_ABORT", "timeout")
    with pytest.raises(Problem) as info:
        t.commit()
    assert info.value.code == "TRANSACTION_ABORTED"
    assert bodies(client, "OUT", 2) == []
    assert [m["body"] for m in receive(client, "g", "IN", n=1)] == ["m0"]


def test_an_operator_abort_ends_the_open_transaction(client: httpx.Client) -> None:
    t = Txn(client, "stuck")
    t.begin()
    t.send("OUT", "never")
    resp = client.post(path("v1", "transactional-ids", "stuck", "force-abort"))
    assert resp.status_code == 200 and resp.json()["aborted_by"] == "operator"
    with pytest.raises(Problem) as info:
        t.commit()
    assert info.value.code == "TRANSACTION_ABORTED"
    assert bodies(client, "OUT", 2) == []


def test_kill_9_mid_transaction_aborts_it_and_committed_ones_stay_whole(start_broker) -> None:
    broker = start_broker()
    with httpx.Client(base_url=broker.url, timeout=10) as client:
        client.post(path("v1", "topics", "IN", "messages"), json={"messages": [{"body": f"m{i}"} for i in range(3)]}).raise_for_status()
        got = receive(client, "g", "IN", n=2)
        done = Txn(client, "done")
        done.begin()
        done.send("OUT", *[f"c{i}" for i in range(50)])
        done.ack([m["receipt_handle"] for m in got])
        done.commit()
        open_txn = Txn(client, "open")
        open_txn.begin()
        open_txn.send("OUT", "o1", "o2")
    broker.kill9()
    broker.start()
    with httpx.Client(base_url=broker.url, timeout=10) as client:
        assert bodies(client, "OUT", 4) == sorted(f"c{i}" for i in range(50))
        states = {x["transactional_id"]: (x["state"], x["aborted_by"]) for x in client.get("/v1/transactional-ids").json()["transactional_ids"]}
        assert states == {"done": ("COMPLETE_COMMIT", None), "open": ("COMPLETE_ABORT", "recovery")}
        assert [m["body"] for m in receive(client, "g", "IN", n=10)] == ["m2"]  # the committed acks survived
        with pytest.raises(Problem) as info:
            open_txn.client = client
            open_txn.commit()
        assert info.value.code == "TRANSACTION_ABORTED"


class Committer(threading.Thread):
    """Commits transactions of 200 messages in a loop; remembers which commits the broker answered."""

    def __init__(self, url: str, tid: str, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.url, self.tid, self.stop_event = url, tid, stop
        self.answered: set[str] = set()
        self.attempted: set[str] = set()

    def run(self) -> None:
        round_no = 0
        while not self.stop_event.is_set():
            try:
                with httpx.Client(base_url=self.url, timeout=5) as client:
                    t = Txn(client, self.tid)
                    while not self.stop_event.is_set():
                        round_no += 1
                        name = f"{self.tid}-{round_no}"
                        t.begin()
                        t.send("OUT", *[f"{name}:{i}" for i in range(200)])
                        self.attempted.add(name)
                        t.commit()
                        self.answered.add(name)
            except (httpx.HTTPError, Problem):
                time.sleep(0.1)


@pytest.mark.slow
def test_kill_9_while_transactions_commit_leaves_each_one_whole_or_absent(start_broker) -> None:
    broker = start_broker({"HALFMQ_BROKER_SEGMENT_BYTES": str(1 << 20)})
    with httpx.Client(base_url=broker.url, timeout=10) as client:
        client.post("/v1/topics", json={"name": "OUT", "queues": 2}).raise_for_status()
    stop = threading.Event()
    committers = [Committer(broker.url, f"c{i}", stop) for i in range(3)]
    for c in committers:
        c.start()
    for _ in range(4):
        time.sleep(random.uniform(0.6, 1.2))
        broker.kill9()
        broker.start()
    time.sleep(0.5)
    stop.set()
    for c in committers:
        c.join(15)
    with httpx.Client(base_url=broker.url, timeout=30) as client:
        per_txn = Counter(b.split(":")[0] for b in bodies(client, "OUT", 2))
    answered = set().union(*(c.answered for c in committers))
    attempted = set().union(*(c.attempted for c in committers))
    partial = {name: n for name, n in per_txn.items() if n != 200}
    print(f"{len(answered)} commits answered, {len(per_txn)} transactions visible, {len(attempted)} attempted, partial: {partial}")
    assert partial == {}
    assert answered <= set(per_txn) <= attempted
    assert len(answered) > 10


def _idempotent_send(client: httpx.Client, ids: dict, sequence: int, *bodies: str) -> httpx.Response:
    return client.post(path("v1", "topics", "PLAIN", "messages"),
                       json={**ids, "sequence": sequence, "messages": [{"body": b} for b in bodies]})


def test_an_idempotent_plain_send_repeated_is_stored_once_and_a_gap_or_an_old_epoch_is_refused(start_broker) -> None:
    broker = start_broker({"HALFMQ_BROKER_IDEMPOTENT_SEND_WINDOW": "4"})
    with httpx.Client(base_url=broker.url, timeout=10) as client:
        client.post("/v1/topics", json={"name": "PLAIN", "queues": 1}).raise_for_status()
        t = Txn(client, "svc")
        ids = {"producer_id": t.producer_id, "epoch": t.epoch}
        first = _idempotent_send(client, ids, 0, "a", "b")
        assert first.status_code == 200, first.text
        again = _idempotent_send(client, ids, 0, "a", "b")
        assert again.json()["duplicate"] is True and again.json()["results"] == first.json()["results"]
        gap = _idempotent_send(client, ids, 5, "x")
        assert (gap.status_code, gap.json()["code"]) == (409, "OUT_OF_ORDER_SEQUENCE")
        half = client.post(path("v1", "topics", "PLAIN", "messages"), json={**ids, "messages": [{"body": "x"}]})
        assert (half.status_code, half.json()["code"]) == (400, "INVALID_REQUEST")
        assert _idempotent_send(client, ids, 1, "c").status_code == 200
        assert [m["body"] for m in read_all(client, "PLAIN", 0)] == ["a", "b", "c"]
    broker.kill9()
    broker.start()
    with httpx.Client(base_url=broker.url, timeout=10) as client:
        after = _idempotent_send(client, ids, 1, "c")  # the retry of the last send, after a crash: its answer, read back
        assert after.status_code == 200 and after.json()["duplicate"] is True
        assert after.json()["results"][0]["queue_offset"] == 2
        Txn(client, "svc")  # a new instance: the old epoch is fenced for sends too
        fenced = _idempotent_send(client, ids, 2, "d")
        assert (fenced.status_code, fenced.json()["code"]) == (409, "PRODUCER_FENCED")
        assert [m["body"] for m in read_all(client, "PLAIN", 0)] == ["a", "b", "c"]


def test_an_idempotent_half_send_repeated_keeps_one_transaction_even_across_kill_9(start_broker) -> None:
    broker = start_broker({"HALFMQ_BROKER_TRANSACTION_TIMEOUT": "3600", "HALFMQ_BROKER_IDEMPOTENT_SEND_WINDOW": "4"})
    half = {"producer_group": "pg", "topic": "HALVES", "message": {"body": "h"}}
    with httpx.Client(base_url=broker.url, timeout=10) as client:
        t = Txn(client, "half-svc")
        ids = {"producer_id": t.producer_id, "epoch": t.epoch}
        first = client.post("/v1/transactions", json={**half, **ids, "sequence": 0})
        assert first.status_code == 200, first.text
        again = client.post("/v1/transactions", json={**half, **ids, "sequence": 0})
        assert again.json()["duplicate"] is True and again.json()["transaction_id"] == first.json()["transaction_id"]
        gap = client.post("/v1/transactions", json={**half, **ids, "sequence": 5})
        assert (gap.status_code, gap.json()["code"]) == (409, "OUT_OF_ORDER_SEQUENCE")
    broker.kill9()
    broker.start()
    with httpx.Client(base_url=broker.url, timeout=10) as client:
        after = client.post("/v1/transactions", json={**half, **ids, "sequence": 0})
        assert after.status_code == 200 and after.json()["duplicate"] is True
        assert {k: after.json()[k] for k in ("transaction_id", "msg_id", "queue_offset")} == \
            {k: first.json()[k] for k in ("transaction_id", "msg_id", "queue_offset")}
        pending = client.get("/v1/transactions", params={"state": "pending"}).json()
        assert [x["transaction_id"] for x in pending["transactions"]] == [first.json()["transaction_id"]]


# --- idempotent producer ids without a transactional id, and the window of numbers -----------------

def _new_ids(client: httpx.Client) -> dict:
    resp = client.post("/v1/producer-ids", json={})
    assert resp.status_code == 201, resp.text
    return resp.json()


def test_numbered_sends_arriving_out_of_order_inside_the_window_are_each_stored_once_even_across_kill_9(start_broker) -> None:
    broker = start_broker({"HALFMQ_BROKER_IDEMPOTENT_SEND_WINDOW": "4"})
    with httpx.Client(base_url=broker.url, timeout=10) as client:
        client.post("/v1/topics", json={"name": "PLAIN", "queues": 1}).raise_for_status()
        ids = _new_ids(client)
        assert ids["epoch"] == 0
        answers = {}
        for sequence in (2, 0, 3, 1, 4, 5, 6, 7, 8):  # out of order, never more than the window past the contiguous ones
            resp = _idempotent_send(client, ids, sequence, f"s{sequence}")
            assert resp.status_code == 200, resp.text
            answers[sequence] = resp.json()["results"]
        repeat = _idempotent_send(client, ids, 6, "s6")
        assert repeat.json()["duplicate"] is True and repeat.json()["results"] == answers[6]
        old = _idempotent_send(client, ids, 1, "s1")  # stored, its answer no longer kept: success without offsets
        assert old.status_code == 200 and old.json()["duplicate"] is True
        assert old.json()["results"][0]["queue_offset"] == -1
        too_far = _idempotent_send(client, ids, 13, "s13")  # contiguous up to 8, window 4
        assert (too_far.status_code, too_far.json()["code"], too_far.json()["expected"]) == (409, "OUT_OF_ORDER_SEQUENCE", 9)
    broker.kill9()
    broker.start()
    with httpx.Client(base_url=broker.url, timeout=10) as client:
        for sequence in (5, 7, 8):  # retries after the crash: their answers, read back from the log
            after = _idempotent_send(client, ids, sequence, f"s{sequence}")
            assert after.status_code == 200 and after.json()["duplicate"] is True
            assert after.json()["results"] == answers[sequence]
        assert _idempotent_send(client, ids, 12, "s12").status_code == 200  # the window survived: 9..11 may still come
        assert _idempotent_send(client, ids, 1, "s1").json()["results"][0]["queue_offset"] == -1
        bodies = [m["body"] for m in read_all(client, "PLAIN", 0)]
    assert sorted(bodies) == sorted(f"s{n}" for n in (*range(9), 12))


def test_a_send_stored_when_the_broker_was_killed_before_answering_gets_its_stored_answer_on_retry(start_broker) -> None:
    from tests.support.lossy_proxy import LossyProxy

    broker = start_broker()
    with httpx.Client(base_url=broker.url, timeout=10) as client:
        client.post("/v1/topics", json={"name": "PLAIN", "queues": 1}).raise_for_status()
        ids = _new_ids(client)
    proxy = LossyProxy(broker.port, "/v1/topics/PLAIN/messages", drops=1)
    try:
        with httpx.Client(base_url=proxy.url, timeout=10) as lossy, pytest.raises(httpx.TransportError):
            _idempotent_send(lossy, ids, 0, "once")  # stored; the answer never reaches the producer
    finally:
        proxy.close()
    broker.kill9()  # and the broker dies before the producer retries
    broker.start()
    with httpx.Client(base_url=broker.url, timeout=10) as client:
        retry = _idempotent_send(client, ids, 0, "once")
        assert retry.status_code == 200 and retry.json()["duplicate"] is True
        assert retry.json()["results"][0]["queue_offset"] == 0
        assert [m["body"] for m in read_all(client, "PLAIN", 0)] == ["once"]


def test_a_producer_id_expires_after_its_idle_time_and_survives_a_restart_until_then(start_broker) -> None:
    broker = start_broker({"HALFMQ_BROKER_PRODUCER_ID_EXPIRATION": "3"})
    with httpx.Client(base_url=broker.url, timeout=10) as client:
        client.post("/v1/topics", json={"name": "PLAIN", "queues": 1}).raise_for_status()
        ids = _new_ids(client)
        assert _idempotent_send(client, ids, 0, "a").status_code == 200
    broker.kill9()
    broker.start()
    with httpx.Client(base_url=broker.url, timeout=10) as client:
        assert _idempotent_send(client, ids, 0, "a").json()["duplicate"] is True  # still known after the restart
        time.sleep(4)
        expired = _idempotent_send(client, ids, 1, "b")
        assert (expired.status_code, expired.json()["code"]) == (409, "UNKNOWN_PRODUCER_ID")
        assert [m["body"] for m in read_all(client, "PLAIN", 0)] == ["a"]
        assert _new_ids(client)["producer_id"] != ids["producer_id"]


@pytest.mark.parametrize(("body", "status", "code"), [
    ({"epoch": 0}, 400, "INVALID_REQUEST"),
    ([], 400, "INVALID_REQUEST"),
], ids=["unknown field", "not an object"])
def test_bad_input_to_producer_ids_is_a_problem_and_hands_out_nothing(broker: BrokerProcess, body, status, code) -> None:
    with httpx.Client(base_url=broker.url, timeout=10) as client:
        resp = client.post("/v1/producer-ids", json=body)
        assert (resp.status_code, resp.json()["code"]) == (status, code)
        assert resp.headers["content-type"].startswith("application/problem+json")
        _new_ids(client)
        assert len(read_all(client, "HALFMQ_TXN_STATE", 0)) == 1  # that one's init record: nothing was handed out before


def test_a_send_naming_an_unknown_producer_id_or_a_wrong_epoch_is_refused(broker: BrokerProcess) -> None:
    with httpx.Client(base_url=broker.url, timeout=10) as client:
        client.post("/v1/topics", json={"name": "PLAIN", "queues": 1}).raise_for_status()
        unknown = _idempotent_send(client, {"producer_id": 77, "epoch": 0}, 0, "x")
        assert (unknown.status_code, unknown.json()["code"]) == (409, "UNKNOWN_PRODUCER_ID")
        ids = _new_ids(client)
        wrong = _idempotent_send(client, {**ids, "epoch": 1}, 0, "x")
        assert (wrong.status_code, wrong.json()["code"]) == (409, "INVALID_PRODUCER_EPOCH")
        assert read_all(client, "PLAIN", 0) == []
