"""Disk watermarks on a real broker process and a real filesystem (docs/decisions/053-disk-watermarks.md).

On a small tmpfs a filler file takes the disk past both marks: the oldest segments go before their time (the state
snapshots' pin moved past them), sends are refused with 503 DISK_ALMOST_FULL and Retry-After while receives and acks
go on; the filler deleted, sends resume with no restart. Without a tmpfs (no root), marks set near zero against the
real disk show the refusal from the broker's first request, over HTTP and the Kafka front.
"""

from __future__ import annotations

import httpx
import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaStorageError

from tests.support.processes import free_port
from tests.support.small_disk import SmallDisk
from tests.support.waiting import wait_for

from .http_helpers import path, receive, send, settle

WATERMARKS = {
    "HALFMQ_BROKER_DISK_EARLY_DELETE_RATIO": "0.5",
    "HALFMQ_BROKER_DISK_REFUSE_SENDS_RATIO": "0.8",
    "HALFMQ_BROKER_DISK_CHECK_INTERVAL": "0.2",
    "HALFMQ_BROKER_SEGMENT_BYTES": "16384",
    "HALFMQ_BROKER_STATE_SNAPSHOT_INTERVAL": "0.2",
}


def metric(client: httpx.Client, name: str) -> float:
    for line in client.get("/metrics").text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} is not in /metrics")


def post_send(client: httpx.Client, topic: str, body: str) -> httpx.Response:
    return client.post(path("v1", "topics", topic, "messages"), json={"messages": [{"body": body}]})


def assert_disk_almost_full(resp: httpx.Response) -> None:
    assert resp.status_code == 503, resp.text[:500]
    assert resp.headers["content-type"].startswith("application/problem+json")
    body = resp.json()
    assert body["code"] == "DISK_ALMOST_FULL" and body["retriable"] is True, body
    assert int(resp.headers["retry-after"]) >= 1


def snapshot_entries(client: httpx.Client, broker) -> int:
    try:
        with open(broker.data_dir / "state-snapshot.json", "rb") as fh:
            return int(fh.readline().split(b" ")[4])
    except (OSError, IndexError, ValueError):
        return -1


def test_past_the_watermarks_old_segments_go_early_sends_are_refused_acks_go_on_and_sends_resume_once_space_is_back(
        small_disk: SmallDisk, start_broker) -> None:
    broker = start_broker(WATERMARKS, data_dir=small_disk.path / "data")
    commitlog = broker.data_dir / "commitlog"
    with httpx.Client(base_url=broker.url, timeout=15) as client:
        for name in ("T", "MARK"):
            client.post("/v1/topics", json={"name": name, "queues": 1}).raise_for_status()
        for n in range(60):
            assert post_send(client, "T", f"m{n:03d}" + "x" * 1000).status_code == 200
        assert len([p for p in commitlog.iterdir() if p.name.isdigit()]) >= 4
        for n in range(2):  # an ack, then a snapshot counting it, twice: the state records' pin moves past the sends
            before = snapshot_entries(client, broker)
            send(client, "MARK", f"mark-{n}")
            got = receive(client, "marker", "MARK", 1)
            assert settle(client, "ack", "marker", "MARK", [got[0]["receipt_handle"]]) == ["OK"]
            wait_for(lambda before=before: snapshot_entries(client, broker) > before, timeout=30)
        assert metric(client, "halfmq_disk_watermark_level") == 0 and metric(client, "halfmq_commit_log_start_offset") == 0
        unread = receive(client, "late", "T", 1)  # a group that holds a delivery across the full disk
        small_disk.fill(leave=small_disk.size // 10)  # ~90 % used: past both marks, not yet out of space

        wait_for(lambda: metric(client, "halfmq_disk_watermark_level") == 2, timeout=30)
        assert_disk_almost_full(post_send(client, "T", "refused"))
        assert_disk_almost_full(client.post("/v1/transactions", json={"producer_group": "pg", "topic": "T",
                                                                      "message": {"body": "a half"}}))
        assert metric(client, "halfmq_disk_refused_sends_total") >= 2
        wait_for(lambda: metric(client, "halfmq_commit_log_start_offset") > 0, timeout=30)  # deleted before their week
        # the start is recorded first, then the files go, then they are counted: a scrape may land between
        assert wait_for(lambda: metric(client, "halfmq_retention_early_deleted_files_total") > 0, timeout=5)
        assert not (commitlog / ("0" * 20)).exists()
        assert settle(client, "ack", "late", "T", [unread[0]["receipt_handle"]]) == ["OK"]  # acks go on
        assert receive(client, "late", "T", 5)  # receives go on (from the earliest retained offset)

        small_disk.free()
        wait_for(lambda: metric(client, "halfmq_disk_watermark_level") == 0, timeout=30)
        resumed = post_send(client, "T", "after")
        assert resumed.status_code == 200, resumed.text[:300]
    assert "Traceback" not in broker.log_path.read_text(errors="replace")


def test_with_marks_below_what_the_real_disk_holds_the_first_send_is_refused_and_receives_still_answer(start_broker) -> None:
    broker = start_broker({"HALFMQ_BROKER_DISK_EARLY_DELETE_RATIO": "0.0001", "HALFMQ_BROKER_DISK_REFUSE_SENDS_RATIO": "0.0002"})
    with httpx.Client(base_url=broker.url, timeout=15) as client:
        assert_disk_almost_full(post_send(client, "NEW", "refused"))
        assert client.get("/v1/topics/NEW").status_code == 404  # nothing stored, not even the topic
        client.post("/v1/topics", json={"name": "T", "queues": 1}).raise_for_status()  # an operator's topic is no send
        assert_disk_almost_full(post_send(client, "T", "refused"))
        assert receive(client, "g", "T", 1) == []
        assert client.get("/v1/topics/T").json()["queues"][0]["max_offset"] == 0
        assert metric(client, "halfmq_disk_watermark_level") == 2 and 0 < metric(client, "halfmq_disk_used_ratio") <= 1


def test_the_kafka_fronts_produce_is_refused_as_a_storage_error_and_its_fetch_still_answers(start_broker) -> None:
    """The Kafka front's Produce goes through the same send path: KAFKA_STORAGE_ERROR, which Kafka's clients retry."""
    kafka_port = free_port()
    broker = start_broker({"HALFMQ_BROKER_KAFKA_PORT": str(kafka_port), "HALFMQ_BROKER_DISK_EARLY_DELETE_RATIO": "0.0001",
                           "HALFMQ_BROKER_DISK_REFUSE_SENDS_RATIO": "0.0002"})
    with httpx.Client(base_url=broker.url, timeout=15) as client:
        client.post("/v1/topics", json={"name": "K", "queues": 1}).raise_for_status()
    producer = KafkaProducer(bootstrap_servers=f"127.0.0.1:{kafka_port}", retries=0, enable_idempotence=False, acks="all")
    try:
        with pytest.raises(KafkaStorageError):
            producer.send("K", b"refused").get(timeout=30)
    finally:
        producer.close(timeout=5)
    consumer = KafkaConsumer(bootstrap_servers=f"127.0.0.1:{kafka_port}", enable_auto_commit=False, consumer_timeout_ms=2000)
    try:
        consumer.assign([TopicPartition("K", 0)])
        assert consumer.end_offsets([TopicPartition("K", 0)])[TopicPartition("K", 0)] == 0
        assert list(consumer) == []
    finally:
        consumer.close()
