"""Issue 42 against a real broker: what idempotent producers make the broker hold is bounded, per number and per principal.

Before, each producer id kept the answers of its last 1,024 sends (~236 MB per id at 1,000 messages a send; three
ids took a broker from 258 to 965 MB), uncapped per principal. Now a window keeps where each send's records are (a
repeat's answer is read back from them, also after a kill -9), and a principal holds at most so many producer ids
and remembered numbers: past them 429, while another principal is unaffected.
"""

from __future__ import annotations

import httpx
import pytest

from tests.support.auth import bearer, write_auth_file
from tests.support.processes import BrokerProcess

pytestmark = pytest.mark.slow

SENDS = 384  # numbered sends of 1,000 messages: the old window kept ~88 MB of their answers
MESSAGES = 1000


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) / 1024


def send(client: httpx.Client, ids: dict, sequence: int, batch: list[dict], topic: str = "ORDER_TOPIC") -> httpx.Response:
    return client.post(f"/v1/topics/{topic}/messages", json={**ids, "sequence": sequence, "messages": batch})


def answers(resp: httpx.Response) -> list[tuple]:
    assert resp.status_code == 200, resp.text[:500]
    return [(r["msg_id"], r["topic"], r["queue_id"], r["queue_offset"], r["commit_log_offset"]) for r in resp.json()["results"]]


def test_a_1000_message_send_repeated_in_the_window_gets_its_first_answer_also_after_a_kill_9_and_memory_stays_put(
        broker: BrokerProcess) -> None:
    pid = broker.proc.pid
    batch = [{"body": f"order line {i}"} for i in range(MESSAGES)]
    with httpx.Client(base_url=broker.url, timeout=60) as client:
        client.post("/v1/topics", json={"name": "ORDER_TOPIC", "queues": 4}).raise_for_status()
        answers(client.post("/v1/topics/ORDER_TOPIC/messages", json={"messages": batch}))  # a warm broker before the baseline
        before = rss_mib(pid)
        ids = client.post("/v1/producer-ids", json={}).json()
        first = {n: answers(send(client, ids, n, batch)) for n in range(SENDS)}
        grown = rss_mib(pid) - before
        print(f"\nbroker RSS {before:.0f} MiB -> +{grown:.1f} MiB after {SENDS} numbered sends of {MESSAGES} messages")
        assert grown < 40  # the old window: +88 MiB for these (236 MB per 1,024 sends)
        assert len({m[0] for m in first[0]}) == MESSAGES
        for n in (0, SENDS // 2, SENDS - 1):
            again = send(client, ids, n, batch)
            assert again.json()["duplicate"] is True and answers(again) == first[n]
    broker.kill9()
    broker.start()
    with httpx.Client(base_url=broker.url, timeout=60) as client:
        for n in (0, SENDS // 2, SENDS - 1):
            again = send(client, ids, n, batch)
            assert again.json()["duplicate"] is True and answers(again) == first[n]
        stored = sum(q["max_offset"] - q["min_offset"] for q in client.get("/v1/topics/ORDER_TOPIC").json()["queues"])
        assert stored == (SENDS + 1) * MESSAGES  # no repeat stored anything


@pytest.fixture
def capped(start_broker, tmp_path) -> tuple[BrokerProcess, dict[str, str]]:
    """A broker with auth on, where a principal holds at most 3 producer ids and 8 remembered numbers (windows of 4)."""
    _, tokens = write_auth_file(tmp_path / "auth.json")
    return start_broker({"HALFMQ_BROKER_AUTH_FILE": str(tmp_path / "auth.json"), "HALFMQ_BROKER_IDEMPOTENT_SEND_WINDOW": "4",
                         "HALFMQ_BROKER_IDEMPOTENT_PRODUCER_IDS_PER_PRINCIPAL": "3",
                         "HALFMQ_BROKER_IDEMPOTENT_SEQUENCES_PER_PRINCIPAL": "8"}), tokens


def assert_too_many(resp: httpx.Response, code: str) -> None:
    assert resp.status_code == 429, resp.text[:500]
    body = resp.json()
    assert (body["code"], body["retriable"]) == (code, True)
    assert 1 <= int(resp.headers["retry-after"]) <= 300  # when the least recently used id may be forgotten (idle 5 min)


def test_a_principal_past_its_caps_gets_429_and_another_principal_is_unaffected(capped) -> None:
    broker, tokens = capped
    with (httpx.Client(base_url=broker.url, timeout=15, headers=bearer(tokens["admin"])) as admin,
          httpx.Client(base_url=broker.url, timeout=15, headers=bearer(tokens["order"])) as order,
          httpx.Client(base_url=broker.url, timeout=15, headers=bearer(tokens["mallory"])) as mallory):
        for topic in ("ORDER_TOPIC", "MALLORY_T"):
            admin.post("/v1/topics", json={"name": topic, "queues": 1}).raise_for_status()
        held = [order.post("/v1/producer-ids", json={}).json() for _ in range(3)]
        assert_too_many(order.post("/v1/producer-ids", json={}), "TOO_MANY_PRODUCER_IDS")
        theirs = mallory.post("/v1/producer-ids", json={})
        assert theirs.status_code == 201, theirs.text
        for ids in held[:2]:
            for n in range(4):  # each window remembers 4: the principal's 8
                answers(send(order, ids, n, [{"body": f"{n}"}]))
        end = admin.get("/healthz").json()["commit_log_end_offset"]
        assert_too_many(send(order, held[2], 0, [{"body": "one too many"}]), "SEND_WINDOWS_FULL")
        assert admin.get("/healthz").json()["commit_log_end_offset"] == end  # refused before anything was written
        answers(send(order, held[0], 4, [{"body": "in order: one remembered, one forgotten"}]))
        for n in range(5):  # another principal's windows are its own
            answers(send(mallory, theirs.json(), n, [{"body": f"{n}"}], "MALLORY_T"))
