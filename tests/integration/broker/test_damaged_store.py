"""A real broker over a damaged data directory: refuse, repair or route around, as the damage calls for."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.conftest import TEST_BROKER_ENV
from tests.support.processes import BrokerProcess, free_port, halfmq_command

from .http_helpers import group_state, read_all, receive, send, settle

pytestmark = pytest.mark.slow

NO_PERIODIC_CHECKPOINT = {"HALFMQ_BROKER_OFFSET_FLUSH_INTERVAL": "3600"}  # only the one at start


def segment_of(data_dir: Path, offset: int) -> Path:
    return max((p for p in (data_dir / "commitlog").iterdir() if int(p.name) <= offset), key=lambda p: int(p.name))


def flip(data_dir: Path, offset: int, bit: int) -> Path:
    seg = segment_of(data_dir, offset)
    data = bytearray(seg.read_bytes())
    data[offset - int(seg.name)] ^= 1 << bit
    seg.write_bytes(bytes(data))
    return seg


def run_broker_once(data_dir: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """`halfmq broker` in the foreground: for runs that are meant to exit by themselves."""
    argv = halfmq_command("broker", "--port", str(free_port()), "--data-dir", str(data_dir), *extra)
    return subprocess.run(argv, env={**os.environ, **TEST_BROKER_ENV}, capture_output=True, text=True, timeout=60)


def receive_everything(client: httpx.Client, group: str, topic: str) -> list[dict]:
    got: list[dict] = []
    while batch := receive(client, group, topic, n=4):
        assert settle(client, "ack", group, topic, [m["receipt_handle"] for m in batch]) == ["OK"] * len(batch)
        got += batch
    return got


def test_a_flipped_size_bit_followed_by_valid_records_makes_the_broker_exit_3_and_truncate_nothing(start_broker, tmp_path: Path) -> None:
    broker: BrokerProcess = start_broker(NO_PERIODIC_CHECKPOINT)
    with httpx.Client(base_url=broker.url, timeout=10) as client:
        sent = [send(client, "SIZES", f"message-{i}")[0] for i in range(6)]
    broker.kill9()  # the checkpoint is still at the start: recovery scans every record
    victim = sent[2]["commit_log_offset"]
    seg = flip(broker.data_dir, victim + 1, 4)  # the size field, +4096
    before = seg.read_bytes()

    result = run_broker_once(broker.data_dir)

    assert result.returncode == 3, result.stderr
    [line] = [ln for ln in result.stderr.splitlines() if "cannot start" in ln]
    assert str(seg) in line and f"offset {victim}" in line and "size" in line
    assert f"next valid record at offset {sent[3]['commit_log_offset']}" in line
    assert seg.read_bytes() == before


def test_a_flipped_bit_in_the_last_record_is_a_torn_tail_and_the_broker_starts(start_broker) -> None:
    broker: BrokerProcess = start_broker(NO_PERIODIC_CHECKPOINT)
    with httpx.Client(base_url=broker.url, timeout=10) as client:
        sent = [send(client, "TAIL", f"message-{i}")[0] for i in range(4)]
    broker.kill9()
    flip(broker.data_dir, sent[-1]["commit_log_offset"] + 1, 4)
    broker.start()
    with httpx.Client(base_url=broker.url, timeout=10) as client:
        bodies = [m["body"] for q in range(4) for m in read_all(client, "TAIL", q)]
        assert sorted(bodies) == [f"message-{i}" for i in range(3)]
        assert send(client, "TAIL", "after")[0]["status"] == "SEND_OK"


def test_damage_behind_the_checkpoint_costs_one_message_and_verify_lists_it(start_broker) -> None:
    broker: BrokerProcess = start_broker()
    with httpx.Client(base_url=broker.url, timeout=10) as client:
        client.post("/v1/topics", json={"name": "DAMAGED", "queues": 2}).raise_for_status()
        sent = [send(client, "DAMAGED", f"message-{i:02d}", queue_id=i % 2)[0] for i in range(20)]
        half = client.post("/v1/transactions", json={"producer_group": "pg", "topic": "DAMAGED", "message": {"body": "tx"}}).json()
        client.post(f"/v1/transactions/{half['transaction_id']}/end", json={"producer_group": "pg", "state": "commit"}).raise_for_status()
    broker.stop()  # a clean stop: the checkpoint covers everything, so start-up will not look
    victim = sent[4]  # queue 0, offset 2
    seg = flip(broker.data_dir, sent[5]["commit_log_offset"] - 1, 0)  # the last byte of its body
    flip(broker.data_dir, half["commit_log_offset"] + 60, 1)  # the half message's topic
    broker.start()

    with httpx.Client(base_url=broker.url, timeout=10) as client:
        got = receive_everything(client, "g", "DAMAGED")
        assert sorted(m["body"] for m in got) == sorted({f"message-{i:02d}" for i in range(20)} - {"message-04"} | {"tx"})
        state = group_state(client, "g")["DAMAGED"]
        assert [(q["committed_offset"], q["lag"]) for q in state] == [(q["max_offset"], 0) for q in state]

        resp = client.get("/v1/topics/DAMAGED/queues/0/messages", params={"offset": 0, "max": 100})
        assert resp.status_code == 200
        page = resp.json()
        assert page["damaged_offsets"] == [victim["queue_offset"]]
        assert len(page["messages"]) == state[0]["max_offset"] - 1 and page["next_offset"] == state[0]["max_offset"]

        problem = client.get(f"/v1/transactions/{half['transaction_id']}")
        assert problem.status_code == 500 and problem.json()["code"] == "DAMAGED_RECORD"

        metrics = client.get("/metrics").text
        assert "halfmq_store_damaged_records_total 2.0" in metrics
        assert "halfmq_receive_damaged_skipped_total 1.0" in metrics
    broker.stop()

    result = run_broker_once(broker.data_dir, "--verify")
    assert result.returncode == 3, result.stdout + result.stderr
    damaged = [ln for ln in result.stdout.splitlines() if ln.startswith("DAMAGED:")]
    assert f"{seg} byte {victim['commit_log_offset'] - int(seg.name)}: body (crc mismatch)" in damaged[0]
    assert f"byte {half['commit_log_offset'] - int(seg.name)}: topic" in damaged[1]


def test_verify_of_a_clean_data_dir_exits_0(start_broker) -> None:
    broker: BrokerProcess = start_broker()
    with httpx.Client(base_url=broker.url, timeout=10) as client:
        send(client, "CLEAN", *[f"m{i}" for i in range(50)])
    broker.stop()
    result = run_broker_once(broker.data_dir, "--verify")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "51 records and 51 consume-queue entries checked; 0 damaged" in result.stdout  # 50 messages, their topic's record


def test_verify_of_a_missing_data_dir_fails_without_creating_it(tmp_path: Path) -> None:
    result = run_broker_once(tmp_path / "nowhere", "--verify")
    assert result.returncode == 1 and "no data directory" in result.stderr
    assert not (tmp_path / "nowhere").exists()


def test_a_deleted_middle_consume_queue_file_is_rebuilt_at_start(start_broker) -> None:
    broker: BrokerProcess = start_broker({"HALFMQ_BROKER_CONSUME_QUEUE_ENTRIES": "16"})
    with httpx.Client(base_url=broker.url, timeout=10) as client:
        client.post("/v1/topics", json={"name": "GAP", "queues": 1}).raise_for_status()
        send(client, "GAP", *[f"m{i:02d}" for i in range(60)])
    broker.stop()
    files = sorted((broker.data_dir / "consumequeue" / "GAP" / "0").iterdir())
    assert len(files) == 4
    files[1].unlink()
    broker.start()
    with httpx.Client(base_url=broker.url, timeout=10) as client:
        assert [m["body"] for m in read_all(client, "GAP", 0)] == [f"m{i:02d}" for i in range(60)]
        assert sorted(m["body"] for m in receive_everything(client, "g", "GAP")) == [f"m{i:02d}" for i in range(60)]


def test_after_a_lost_log_tail_a_caught_up_group_gets_new_messages_and_a_new_pending_transaction_survives(start_broker) -> None:
    broker: BrokerProcess = start_broker({"HALFMQ_BROKER_TRANSACTION_TIMEOUT": "3600"})
    with httpx.Client(base_url=broker.url, timeout=10) as client:
        client.post("/v1/topics", json={"name": "LOST", "queues": 1}).raise_for_status()
        sent = [send(client, "LOST", f"m{i}")[0] for i in range(5)]
        assert len(receive_everything(client, "g", "LOST")) == 5
        tx = client.post("/v1/transactions", json={"producer_group": "pg", "topic": "LOST", "message": {"body": "tx1"}}).json()
        client.post(f"/v1/transactions/{tx['transaction_id']}/end", json={"producer_group": "pg", "state": "rollback"}).raise_for_status()
    broker.stop()  # offsets durable: group g at 5, the transaction checkpoint past tx1
    cut = sent[3]["commit_log_offset"]
    seg = segment_of(broker.data_dir, cut)
    seg.write_bytes(seg.read_bytes()[: cut - int(seg.name)])  # m3, m4 and tx1 are lost
    for later in (p for p in (broker.data_dir / "commitlog").iterdir() if int(p.name) > cut):
        later.unlink()
    broker.start()
    with httpx.Client(base_url=broker.url, timeout=10) as client:
        assert group_state(client, "g")["LOST"][0]["committed_offset"] == 3
        send(client, "LOST", "new")
        assert [m["body"] for m in receive_everything(client, "g", "LOST")] == ["new"]
        pending = client.post("/v1/transactions", json={"producer_group": "pg", "topic": "LOST", "message": {"body": "tx2"}}).json()
    broker.stop()
    broker.start()
    with httpx.Client(base_url=broker.url, timeout=10) as client:
        listed = client.get("/v1/transactions", params={"state": "pending"}).json()["transactions"]
        assert [t["transaction_id"] for t in listed] == [pending["transaction_id"]]
        end = client.post(f"/v1/transactions/{pending['transaction_id']}/end", json={"producer_group": "pg", "state": "commit"})
        assert end.status_code == 200
        assert [m["body"] for m in read_all(client, "LOST", 0)] == ["m0", "m1", "m2", "new", "tx2"]
