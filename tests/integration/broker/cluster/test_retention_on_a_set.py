"""Retention on a broker set of three real processes on etcd (docs/decisions/052-retention-by-whole-segments-and-pins.md).

The leader decides the log start (its retention, pinned by its state snapshots, which it writes only under the high
watermark); every fetch answer carries it and each follower deletes below it too, once it holds the leader's state
snapshot. A follower whose log ends below the leader's log start takes the leader's snapshot and begins there. The
retention is two seconds, checked five times a second, with 4 KiB segments and a snapshot every 0.2 s.
"""

from __future__ import annotations

import json
import time
import zlib
from pathlib import Path

import httpx
import pytest

from halfmq.broker.cluster.term_history import TermHistory
from halfmq.broker.store import log_start as log_start_module
from tests.support.broker_set import BrokerSet
from tests.support.set_load import read_back
from tests.support.waiting import wait_for

from ..http_helpers import receive, send, settle

pytestmark = pytest.mark.slow

SET_ENV = {
    "HALFMQ_BROKER_RETENTION": "2s",
    "HALFMQ_BROKER_RETENTION_CHECK_INTERVAL": "0.2",
    "HALFMQ_BROKER_SEGMENT_BYTES": "4096",
    "HALFMQ_BROKER_STATE_SNAPSHOT_INTERVAL": "0.2",
}
FIRST_SEGMENT = "0" * 20


def log_start(data_dir: Path) -> int:
    """The node's recorded log start (0 before retention ever moved it)."""
    try:
        return int(json.loads((data_dir / "log_start.json").read_text())["offset"])
    except FileNotFoundError:
        return 0


def segments(data_dir: Path) -> dict[str, int]:
    """Each commit-log segment file the node holds, by name, with the CRC of its bytes."""
    return {p.name: zlib.crc32(p.read_bytes()) for p in sorted((data_dir / "commitlog").iterdir()) if p.name.isdigit()}


def fill(url: str, topic: str, count: int, tag: str) -> None:
    """``count`` messages of ~600 bytes, each acknowledged by a quorum: some segments of 4 KiB."""
    with httpx.Client(base_url=url, timeout=15) as client:
        for i in range(0, count, 4):
            send(client, topic, *(f"{tag}-{n:04d}-" + "x" * 500 for n in range(i, min(i + 4, count))))


def snapshot_past_it(url: str, data_dir: Path) -> None:
    """An ack (a state record), then the leader's snapshot counting it: retention's pin moves past what was sent."""
    before = (data_dir / "state-snapshot.json").stat().st_mtime_ns if (data_dir / "state-snapshot.json").exists() else 0
    with httpx.Client(base_url=url, timeout=15) as client:
        send(client, "MARK", "mark")
        got = receive(client, "marker", "MARK", 1, wait=2)
        assert settle(client, "ack", "marker", "MARK", [got[0]["receipt_handle"]]) == ["OK"]
    wait_for(lambda: (data_dir / "state-snapshot.json").exists()
             and (data_dir / "state-snapshot.json").stat().st_mtime_ns > before, timeout=30)


def retained_past(brokers: BrokerSet, leader: str, offset: int) -> int:
    """Wait until the leader's log starts past ``offset`` and every live node starts where it does; that start."""
    def same_start() -> int:
        start = log_start(brokers.nodes[leader].data_dir)
        starts = {log_start(node.data_dir) for node in brokers.nodes.values() if node.alive}
        return start if start > offset and starts == {start} else 0

    for _ in range(3):  # the older of the two snapshot files pins the log: two more move it past what was sent
        snapshot_past_it(brokers.nodes[leader].url, brokers.nodes[leader].data_dir)
    return wait_for(same_start, timeout=60)


def queues(url: str, topic: str) -> list[tuple[int, int]]:
    """Each queue's earliest retained and next offset, as the node answers them."""
    answer = httpx.get(f"{url}/v1/topics/{topic}", timeout=10)
    answer.raise_for_status()
    return [(q["min_offset"], q["max_offset"]) for q in answer.json()["queues"]]


def assert_same_log(brokers: BrokerSet, leader: str, topic: str) -> None:
    """Every live node holds the leader's segments from its log start on, byte for byte, and none below it, and
    answers the same queue offsets for ``topic``."""
    brokers.caught_up()
    start = log_start(brokers.nodes[leader].data_dir)
    expected = segments(brokers.nodes[leader].data_dir)
    assert expected and all(int(name) >= start for name in expected)
    offsets = queues(brokers.nodes[leader].url, topic)
    for node_id, node in brokers.nodes.items():
        if node.alive:
            assert log_start(node.data_dir) == start, node_id
            assert segments(node.data_dir) == expected, node_id
            wait_for(lambda url=node.url: queues(url, topic) == offsets, timeout=10)  # (a follower shows what is acknowledged)


def test_old_segments_go_on_every_node_and_every_node_keeps_the_leaders_bytes(broker_set: BrokerSet) -> None:
    leader = broker_set.leader()
    url = broker_set.nodes[leader].url
    for topic in ("T", "MARK"):
        httpx.post(f"{url}/v1/topics", json={"name": topic, "queues": 1}, timeout=10).raise_for_status()
    fill(url, "T", 60, "old")
    broker_set.caught_up()
    for node in broker_set.nodes.values():
        assert (node.data_dir / "commitlog" / FIRST_SEGMENT).exists()
    time.sleep(2.5)  # past the retention
    start = retained_past(broker_set, leader, 0)
    fill(url, "T", 8, "new")  # the followers go on appending at the same offsets after deleting
    broker_set.caught_up()
    wait_for(lambda: {log_start(n.data_dir) for n in broker_set.nodes.values()} == {log_start(broker_set.nodes[leader].data_dir)},
             timeout=30)
    assert_same_log(broker_set, leader, "T")
    for node in broker_set.nodes.values():
        assert not (node.data_dir / "commitlog" / FIRST_SEGMENT).exists()
        assert log_start(node.data_dir) >= start


def test_a_follower_stopped_while_the_log_start_passes_its_end_catches_up_from_the_leaders_snapshot(broker_set: BrokerSet) -> None:
    leader = broker_set.leader()
    url = broker_set.nodes[leader].url
    for topic in ("T", "MARK"):
        httpx.post(f"{url}/v1/topics", json={"name": topic, "queues": 1}, timeout=10).raise_for_status()
    fill(url, "T", 12, "early")
    broker_set.caught_up()
    follower = next(n for n in broker_set.nodes if n != leader)
    node = broker_set.nodes[follower]
    node.stop(grace=10)
    stopped_at = max(int(name) for name in segments(node.data_dir))  # its last segment: its log ends in it
    fill(url, "T", 60, "while-away")  # a quorum of two goes on
    time.sleep(2.5)
    retained_past(broker_set, leader, stopped_at + 4096)  # the leader's log starts past the stopped follower's end
    node.start(timeout=60)
    wait_for(lambda: (v := broker_set.view(leader)) and follower in v["in_sync"], timeout=60)
    assert_same_log(broker_set, leader, "T")
    assert (node.data_dir / "state-snapshot.json").exists()  # the leader's, what a promotion replays from
    assert min(int(name) for name in segments(node.data_dir)) > stopped_at
    with httpx.Client(base_url=node.url, timeout=15) as client:  # the follower reads what it took, at the leader's offsets
        first = client.get("/v1/topics/T/queues/0/messages", params={"offset": queues(node.url, "T")[0][0], "max": 1}).json()
    assert first["messages"] and first["messages"][0]["body"].startswith("while-away-"), first


def test_after_a_leader_kill_9_the_new_leader_keeps_the_log_start_and_every_acknowledged_message(broker_set: BrokerSet) -> None:
    leader = broker_set.leader()
    url = broker_set.nodes[leader].url
    for topic in ("T", "MARK", "AFTER"):
        httpx.post(f"{url}/v1/topics", json={"name": topic, "queues": 1}, timeout=10).raise_for_status()
    ids = httpx.post(f"{url}/v1/producer-ids", json={}, timeout=10).json()
    numbered = {"producer_id": ids["producer_id"], "epoch": ids["epoch"], "sequence": 0, "messages": [{"body": "numbered"}]}
    assert httpx.post(f"{url}/v1/topics/T/messages", json=numbered, timeout=10).status_code == 200  # below the log start soon
    fill(url, "T", 60, "old")
    time.sleep(2.5)
    start = retained_past(broker_set, leader, 0)
    fill(url, "AFTER", 20, "kept")  # acknowledged by a quorum after the log start moved
    broker_set.nodes[leader].kill9()
    new = broker_set.leader(timeout=30, not_=leader)
    new_url = broker_set.nodes[new].url
    assert log_start(broker_set.nodes[new].data_dir) >= start
    assert sorted(read_back(new_url, "AFTER")) == [f"kept-{n:04d}-" + "x" * 500 for n in range(20)]
    again = httpx.post(f"{new_url}/v1/topics/T/messages", json=numbered, timeout=10)  # its state came with the snapshot
    assert again.status_code == 200 and again.json()["duplicate"] is True, again.text
    fill(new_url, "AFTER", 4, "next")
    assert_same_log(broker_set, new, "AFTER")


def test_every_node_hides_what_a_topics_own_limit_hid_and_a_new_leader_from_its_first_answer(etcd, tmp_path: Path) -> None:
    brokers = BrokerSet(etcd, tmp_path, env={"HALFMQ_BROKER_RETENTION_CHECK_INTERVAL": "0.2"}).start()  # the broker's 7 days
    try:
        leader = brokers.leader()
        url = brokers.nodes[leader].url
        httpx.post(f"{url}/v1/topics", json={"name": "SHORT", "queues": 1}, timeout=10).raise_for_status()
        fill(url, "SHORT", 2, "old")
        brokers.caught_up()
        httpx.patch(f"{url}/v1/topics/SHORT", json={"retention_ms": 1000}, timeout=10).raise_for_status()
        for node in brokers.nodes.values():  # the followers' reads too (they serve offset reads)
            wait_for(lambda url=node.url: queues(url, "SHORT") == [(2, 2)], timeout=30)
        assert log_start(brokers.nodes[leader].data_dir) == 0  # the bytes are all there: only the floors hide them
        brokers.nodes[leader].kill9()
        survivors = [node_id for node_id, node in brokers.nodes.items() if node.alive]
        answers, promoted = 0, False
        deadline = time.monotonic() + 60
        while not promoted and time.monotonic() < deadline:  # every answer from the kill on, the new leader's first too
            for node_id in survivors:
                promoted = promoted or bool((view := brokers.view(node_id)) and view["writable"])
                try:
                    read = httpx.get(f"{brokers.nodes[node_id].url}/v1/topics/SHORT/queues/0/messages",
                                     params={"offset": 0}, timeout=5)
                except httpx.HTTPError:
                    continue
                if read.status_code == 200:
                    answers += 1
                    assert read.json()["messages"] == [], (node_id, read.text)
        new = brokers.leader(timeout=30, not_=leader)
        read = httpx.get(f"{brokers.nodes[new].url}/v1/topics/SHORT/queues/0/messages", params={"offset": 0}, timeout=5)
        assert read.status_code == 200 and read.json()["messages"] == [], read.text
        assert answers > 0
    finally:
        brokers.stop()


class Crash(Exception):
    """Where the test stops a follower's switch to its leader's log start, as a kill -9 would (all of it is on disk)."""


def test_a_follower_that_crashed_while_beginning_at_the_leaders_log_start_ends_with_the_leaders_bytes(
        broker_set: BrokerSet) -> None:
    leader = broker_set.leader()
    url = broker_set.nodes[leader].url
    for topic in ("T", "MARK"):
        httpx.post(f"{url}/v1/topics", json={"name": topic, "queues": 1}, timeout=10).raise_for_status()
    fill(url, "T", 12, "early")
    broker_set.caught_up()
    follower = next(n for n in broker_set.nodes if n != leader)
    node = broker_set.nodes[follower]
    # before the switch is durable whole (the old data dir stands), once it is, and midway through moving it in
    for step in ("staged", "ready", "moved commitlog"):
        node.stop(grace=10)
        stopped_at = max(int(name) for name in segments(node.data_dir))
        fill(url, "T", 60, f"away-{step.split()[-1]}")
        time.sleep(2.5)
        start = retained_past(broker_set, leader, stopped_at + 4096)
        leader_dir = broker_set.nodes[leader].data_dir
        received = node.data_dir / "state-snapshot.receiving"  # the leader's snapshot, as take_snapshot receives it
        received.write_bytes((leader_dir / "state-snapshot.json").read_bytes())
        history = TermHistory(node.data_dir / "term-history.json").adopted(
            TermHistory(leader_dir / "term-history.json").entries, start)

        def crash_at(reached: str, step: str = step) -> None:
            if reached == step:
                raise Crash(reached)

        with pytest.raises(Crash):  # the follower's own switch, stopped at ``step`` (its process is down meanwhile)
            log_start_module.begin_at(node.data_dir, start, received, {"term-history.json": history}, crash_at)
        node.start(timeout=60)  # its open finishes the switch or rolls it back; a rolled-back one is behind again
        wait_for(lambda: (v := broker_set.view(leader)) and follower in v["in_sync"], timeout=60)
        assert_same_log(broker_set, leader, "T")
        assert not (node.data_dir / log_start_module.READY).exists()
        assert not (node.data_dir / log_start_module.STAGING).exists()
        assert min(int(name) for name in segments(node.data_dir)) > stopped_at
