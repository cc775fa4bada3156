"""Retention on a real broker process: a retention of a second or two, checked five times a second, small segments.

Before the first state snapshot a restart replays every state record, so the state records pin holds the whole log:
nothing goes, and a half older than the retention still commits by check-back. Once snapshots are written, the pin is
the older snapshot's position (``state_snapshot.replay_start_offset``): old segments really go, a group behind
continues from the log start with the skip counted, and a kill -9 restart afterwards has the state it had.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import httpx

from tests.support.check_server import CheckServer
from tests.support.waiting import wait_for

from .http_helpers import path, receive, send, settle

SHORT_RETENTION = {
    "HALFMQ_BROKER_RETENTION": "1s",
    "HALFMQ_BROKER_RETENTION_CHECK_INTERVAL": "0.2",
    "HALFMQ_BROKER_SEGMENT_BYTES": "4096",
    "HALFMQ_BROKER_TRANSACTION_TIMEOUT": "0.5",
    "HALFMQ_BROKER_TRANSACTION_CHECK_INTERVAL": "0.3",
    "HALFMQ_BROKER_CHECK_TIMEOUT": "1.0",
    "HALFMQ_BROKER_STATE_SNAPSHOT_INTERVAL": "3600",  # no snapshot: a restart replays every state record
}


def metric(client: httpx.Client, name: str) -> float:
    for line in client.get("/metrics").text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} is not in /metrics")


def test_before_the_first_state_snapshot_nothing_goes_and_an_old_half_still_commits_by_check_back(start_broker, checks: CheckServer) -> None:
    broker = start_broker(SHORT_RETENTION)
    with httpx.Client(base_url=broker.url, timeout=15) as client:
        client.post("/v1/topics", json={"name": "ORDERS", "queues": 2}).raise_for_status()
        tx = client.post("/v1/transactions", json={"producer_group": "pg", "topic": "ORDERS", "message": {"body": "order 1"}}).json()
        for _ in range(40):  # ten segments and more after the half's
            client.post("/v1/topics/FILLER/messages", json={"messages": [{"body": "x" * 1000}]}).raise_for_status()
        segments = sorted((broker.data_dir / "commitlog").iterdir())
        time.sleep(2.0)  # the retention twice over, ten passes
        assert sorted((broker.data_dir / "commitlog").iterdir()) == segments  # held: a restart replays every state record
        assert metric(client, "halfmq_commit_log_start_offset") == 0
        checks.answer_state("commit")
        client.post("/v1/producers/heartbeat", json={"producer_group": "pg", "client_id": "c1", "check_url": checks.url}).raise_for_status()
        wait_for(lambda: client.get(f"/v1/transactions/{tx['transaction_id']}").json()["state"] == "committed")
        assert [m["body"] for m in receive(client, "billing", "ORDERS")] == ["order 1"]


SNAPSHOTTED_RETENTION = {
    "HALFMQ_BROKER_RETENTION": "2s",
    "HALFMQ_BROKER_RETENTION_CHECK_INTERVAL": "0.2",
    "HALFMQ_BROKER_SEGMENT_BYTES": "4096",
    "HALFMQ_BROKER_STATE_SNAPSHOT_INTERVAL": "0.2",
}
SENDS = 120  # ~600 bytes each: some twenty segments of 4 KiB
FIRST_SEGMENT = "0" * 20


def _snapshot_entries(data_dir: Path) -> int:
    """The entries the broker's newest state snapshot counts (its header), -1 without one."""
    try:
        with open(data_dir / "state-snapshot.json", "rb") as fh:
            return int(fh.readline().split(b" ")[4])
    except (OSError, IndexError, ValueError):
        return -1


def _labelled(client: httpx.Client, name: str, **labels: str) -> float:
    wanted = {f'{k}="{v}"' for k, v in labels.items()}
    for line in client.get("/metrics").text.splitlines():
        m = re.fullmatch(rf"{name}\{{(.*)\}} (\S+)", line)
        if m and wanted <= set(m.group(1).split(",")):
            return float(m.group(2))
    return 0.0


def _a_state_record_and_a_snapshot_past_it(client: httpx.Client, broker, n: int) -> None:
    """An ack (a state record), then a snapshot counting it: the snapshot's position moves past everything before."""
    before = _snapshot_entries(broker.data_dir)
    send(client, "MARK", f"mark-{n}")
    got = receive(client, "marker", "MARK", 1)
    assert settle(client, "ack", "marker", "MARK", [got[0]["receipt_handle"]]) == ["OK"]
    wait_for(lambda: _snapshot_entries(broker.data_dir) > before, timeout=30)


def test_once_state_snapshots_are_written_old_segments_go_a_group_behind_skips_and_a_kill_9_restart_keeps_the_state(
        start_broker) -> None:
    broker = start_broker(SNAPSHOTTED_RETENTION)
    commitlog = broker.data_dir / "commitlog"
    with httpx.Client(base_url=broker.url, timeout=15) as client:
        for name in ("T", "MARK"):
            client.post("/v1/topics", json={"name": name, "queues": 1}).raise_for_status()
        ids = client.post("/v1/producer-ids", json={}).json()
        ids = {"producer_id": ids["producer_id"], "epoch": ids["epoch"]}

        def numbered(sequence: int) -> httpx.Response:
            return client.post(path("v1", "topics", "T", "messages"),
                               json={**ids, "sequence": sequence, "messages": [{"body": f"m{sequence:04d}" + "x" * 500}]})

        for sequence in range(SENDS):
            assert numbered(sequence).status_code == 200
        behind = receive(client, "behind", "T", 2)  # a group that read two, then stopped
        assert settle(client, "ack", "behind", "T", [m["receipt_handle"] for m in behind]) == ["OK", "OK"]
        assert (commitlog / FIRST_SEGMENT).exists() and len(list(commitlog.iterdir())) > 10
        for n in range(2):  # both snapshot files past the sends: the older one is what retention keeps from
            _a_state_record_and_a_snapshot_past_it(client, broker, n)

        def deleted_below_the_start() -> int:
            """The log start once it is past 0 and no segment below it is left (recorded first, then deleted)."""
            start = int(metric(client, "halfmq_commit_log_start_offset"))
            return start if start > 0 and all(int(p.name) >= start for p in commitlog.iterdir() if p.name.isdigit()) else 0

        start = wait_for(deleted_below_the_start, timeout=30)
        assert not (commitlog / FIRST_SEGMENT).exists()
        # counted just after the files go: a scrape may land between the two
        assert wait_for(lambda: metric(client, "halfmq_retention_deleted_files_total") > 0, timeout=5)
        first_kept = client.get("/v1/topics/T").json()
        assert first_kept["queues"][0]["min_offset"] > 2, first_kept
        resumed = receive(client, "behind", "T", 1)  # continues from the earliest retained offset, the skip counted
        continued_at = resumed[0]["queue_offset"]  # (retention runs on meanwhile: at or past the start read above)
        assert continued_at >= first_kept["queues"][0]["min_offset"]
        assert _labelled(client, "halfmq_retention_skipped_messages_total", consumer_group="behind", topic="T") == continued_at - 2
        again = numbered(SENDS - 1)
        assert again.status_code == 200 and again.json()["duplicate"] is True, again.text

    broker.kill9()
    broker.start()
    with httpx.Client(base_url=broker.url, timeout=15) as client:
        assert metric(client, "halfmq_commit_log_start_offset") >= start
        assert not (commitlog / FIRST_SEGMENT).exists()
        listed = client.get("/v1/topics").json()
        assert {"T", "MARK"} <= {t["name"] for t in listed["topics"]}, listed
        again = client.post(path("v1", "topics", "T", "messages"),
                            json={**ids, "sequence": SENDS - 1, "messages": [{"body": f"m{SENDS - 1:04d}" + "x" * 500}]})
        assert again.status_code == 200 and again.json()["duplicate"] is True, again.text
        after = client.post(path("v1", "topics", "T", "messages"),
                            json={**ids, "sequence": SENDS, "messages": [{"body": "next"}]})
        assert after.status_code == 200 and not after.json().get("duplicate"), after.text
        kept = client.get("/v1/topics/T").json()["queues"][0]["min_offset"]  # retention ran on meanwhile: not below
        assert first_kept["queues"][0]["min_offset"] <= kept <= SENDS - 1
        later = receive(client, "behind", "T", SENDS + 1)  # the group goes on from the log start to the new send
        assert later and later[0]["queue_offset"] >= kept and later[-1]["body"] == "next", later[:1]
