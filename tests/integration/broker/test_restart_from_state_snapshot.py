"""A real broker restarted with kill -9 reads its state snapshot plus the records written after it, not its history
(issue 44), and ends with the state a full replay gives: numbered sends still answered as duplicates, an open
transaction aborted, committed acks kept, registrations still there."""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

import httpx

from tests.support.check_server import CheckServer
from tests.support.processes import BrokerProcess
from tests.support.waiting import wait_for

from .http_helpers import path, receive, send, settle

SENDS = 1_500
TRANSACTIONS = 40
REPLAYED = re.compile(r"(\d+) records read after the state snapshot's entry (\d+)")
FAST_SNAPSHOTS = {"HALFMQ_BROKER_STATE_SNAPSHOT_INTERVAL": "0.2"}


def _numbered(client: httpx.Client, ids: dict, sequence: int, body: str) -> httpx.Response:
    return client.post(path("v1", "topics", "T", "messages"), json={**ids, "sequence": sequence, "messages": [{"body": body}]})


def _transaction(client: httpx.Client, tid: str, *, commit: bool, acks: list[str] = ()) -> None:  # type: ignore[assignment]
    step = lambda verb, body: client.post(path("v1", "transactional-ids", tid, verb), json={**ids, **body})  # noqa: E731
    init = client.post(path("v1", "transactional-ids", tid, "init"), json={}).json()
    ids = {"producer_id": init["producer_id"], "epoch": init["epoch"]}
    assert step("begin", {"sequence": 0}).status_code == 200
    assert step("messages", {"sequence": 1, "messages": [{"topic": "T", "body": tid}]}).status_code == 200
    if acks:
        assert step("acks", {"sequence": 2, "receipt_handles": list(acks)}).status_code == 200
    if commit:
        assert step("commit", {}).status_code == 200


def _snapshot_entries(data_dir: Path) -> int:
    """The entries the broker's newest state snapshot counts (its header), -1 without one."""
    try:
        with open(data_dir / "state-snapshot.json", "rb") as fh:
            return int(fh.readline().split(b" ")[4])
    except (OSError, IndexError, ValueError):
        return -1


def _caught_up(data_dir: Path) -> bool:
    """The newest snapshot counts every entry written so far: it no longer moves (the broker takes one every 0.2 s)."""
    before = _snapshot_entries(data_dir)
    time.sleep(1.0)
    return before > 0 and _snapshot_entries(data_dir) == before


def _replayed(broker: BrokerProcess) -> tuple[int, int]:
    """What the last start's replay says it read: (records after the snapshot's entry, that entry)."""
    assert broker.log_path is not None
    found = REPLAYED.findall(broker.log_path.read_text())
    assert found, broker.tail()
    return int(found[-1][0]), int(found[-1][1])


def test_a_restart_after_kill_9_reads_the_snapshot_and_the_tail_and_ends_as_a_full_replay(
        start_broker, tmp_path: Path, checks: CheckServer) -> None:
    broker: BrokerProcess = start_broker(FAST_SNAPSHOTS)
    with httpx.Client(base_url=broker.url, timeout=15) as client:
        for name in ("T", "IN"):
            client.post("/v1/topics", json={"name": name, "queues": 1}).raise_for_status()
        ids = client.post("/v1/producer-ids", json={}).json()
        ids = {"producer_id": ids["producer_id"], "epoch": ids["epoch"]}
        for sequence in range(SENDS):  # the history a full replay reads again
            assert _numbered(client, ids, sequence, f"m{sequence}").status_code == 200
        for n in range(TRANSACTIONS):
            _transaction(client, f"tx-{n}", commit=True)
        send(client, "IN", *(f"in-{n}" for n in range(6)))
        got = receive(client, "g", "IN", 6)
        assert settle(client, "ack", "g", "IN", [m["receipt_handle"] for m in got[:2]]) == ["OK", "OK"]
        _transaction(client, "acker", commit=True, acks=[m["receipt_handle"] for m in got[2:4]])
        assert client.post("/v1/producers/heartbeat", json={"producer_group": "pg", "client_id": "c1",
                                                             "check_url": checks.url}).status_code == 200
        wait_for(lambda: _caught_up(broker.data_dir), timeout=60)
        for sequence in range(SENDS, SENDS + 5):  # the tail: after the snapshot
            assert _numbered(client, ids, sequence, f"m{sequence}").status_code == 200
        _transaction(client, "left-open", commit=False)
    broker.kill9()
    shutil.copytree(broker.data_dir, tmp_path / "full")
    for name in ("state-snapshot.json", "state-snapshot.previous.json"):
        (tmp_path / "full" / name).unlink(missing_ok=True)
    broker.start()
    read, entry = _replayed(broker)
    assert entry > SENDS + TRANSACTIONS * 3 and read < 30  # the tail, not the history
    full = start_broker(data_dir=tmp_path / "full")
    full_read, full_entry = _replayed(full)
    assert full_entry == 0 and full_read >= entry + read
    for url in (broker.url, full.url):
        with httpx.Client(base_url=url, timeout=15) as client:
            again = _numbered(client, ids, 3, "m3")
            assert again.status_code == 200 and again.json()["duplicate"] is True, again.text
            assert _numbered(client, ids, SENDS + 4, f"m{SENDS + 4}").json()["duplicate"] is True
            assert client.get(path("v1", "transactional-ids", "left-open")).json()["state"] == "COMPLETE_ABORT"
            assert client.get(path("v1", "transactional-ids", "tx-7")).json()["state"] == "COMPLETE_COMMIT"
            assert [m["body"] for m in receive(client, "g", "IN", 6)] == ["in-4", "in-5"]  # what was acked stays acked
            producers = client.get("/v1/producers").json()
            assert "c1" in str(producers), producers
