"""Damaged or missing metadata files at start-up: derived ones are rebuilt, source ones refused in one clear line."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.conftest import TEST_BROKER_ENV
from tests.support.processes import BrokerProcess

from .http_helpers import path, read_all, receive, settle

TOPIC = "META_TOPIC"
EXIT_DAMAGED_METADATA = 4


def populated_data_dir(start_broker, tmp_path: Path) -> Path:
    """A stopped broker's data dir with a 3-queue topic, messages, and a group's committed offsets."""
    data = tmp_path / "meta-data"
    broker = start_broker(data_dir=data)
    with httpx.Client(base_url=broker.url, timeout=10) as client:
        client.post("/v1/topics", json={"name": TOPIC, "queues": 3}).raise_for_status()
        for q in range(3):
            client.post(path("v1", "topics", TOPIC, "messages"),
                        json={"messages": [{"body": f"q{q}-{i}", "queue_id": q} for i in range(4)]}).raise_for_status()
        got = receive(client, "G", TOPIC, 100)
        assert len(got) == 12
        settle(client, "ack", "G", TOPIC, [m["receipt_handle"] for m in got])
    broker.stop()
    return data


def truncate(file: Path) -> None:
    file.write_bytes(file.read_bytes()[: file.stat().st_size // 2])


def start_expecting_exit(data: Path, tmp_path: Path) -> tuple[int, str]:
    broker = BrokerProcess(data, tmp_path, TEST_BROKER_ENV)
    with pytest.raises(RuntimeError, match="exited with"):
        broker.start(timeout=30)
    assert broker.proc is not None
    return broker.proc.returncode, broker.log_path.read_text(errors="replace").split("===== start")[-1]


@pytest.mark.parametrize("name", ["topics.json", "consumer_offsets.json"])
def test_a_damaged_source_file_stops_start_up_with_one_line_naming_it(start_broker, tmp_path: Path, name: str) -> None:
    data = populated_data_dir(start_broker, tmp_path)
    truncate(data / name)
    code, output = start_expecting_exit(data, tmp_path)
    assert code == EXIT_DAMAGED_METADATA, output
    assert "Traceback" not in output
    errors = [line for line in output.splitlines() if " ERROR " in line]
    assert len(errors) == 1 and str(data / name) in errors[0], output


@pytest.mark.parametrize("name", ["checkpoint.json", "producers.json"])
def test_a_damaged_derived_file_is_rebuilt_and_reported(start_broker, tmp_path: Path, name: str) -> None:
    data = populated_data_dir(start_broker, tmp_path)
    target = data / name
    if not target.exists():
        target.write_text('{"producers": [{"group": "P", "client_id": "c1", "check_url": null}]}')
    truncate(target)
    broker = start_broker(data_dir=data)
    with httpx.Client(base_url=broker.url, timeout=10) as client:
        assert sorted(m["body"] for q in range(3) for m in read_all(client, TOPIC, q)) == sorted(
            f"q{q}-{i}" for q in range(3) for i in range(4))
        assert receive(client, "G", TOPIC, 100) == []  # the group's progress was kept
    output = broker.log_path.read_text(errors="replace").split("===== start")[-1]
    assert "Traceback" not in output
    assert len([line for line in output.splitlines() if str(target) in line]) == 1, output


def test_a_deleted_topics_file_is_rebuilt_from_the_consume_queues_and_logged(start_broker, tmp_path: Path) -> None:
    data = populated_data_dir(start_broker, tmp_path)
    (data / "topics.json").unlink()
    broker = start_broker(data_dir=data)
    with httpx.Client(base_url=broker.url, timeout=10) as client:
        topic = client.get(path("v1", "topics", TOPIC))
        assert topic.status_code == 200, topic.text
        assert len(topic.json()["queues"]) == 3
        assert sorted(m["body"] for q in range(3) for m in read_all(client, TOPIC, q)) == sorted(
            f"q{q}-{i}" for q in range(3) for i in range(4))
    output = broker.log_path.read_text(errors="replace").split("===== start")[-1]
    assert "topics.json" in output and TOPIC in output, output
    broker.stop()
    assert TOPIC in (data / "topics.json").read_text()  # written back


def test_a_new_topic_keeps_its_queue_count_when_topics_file_is_deleted_before_any_restart(start_broker, tmp_path: Path) -> None:
    data = tmp_path / "fresh"
    broker = start_broker(data_dir=data)
    with httpx.Client(base_url=broker.url, timeout=10) as client:
        client.post("/v1/topics", json={"name": "WIDE", "queues": 5}).raise_for_status()
        client.post(path("v1", "topics", "WIDE", "messages"), json={"messages": [{"body": "x", "queue_id": 0}]}).raise_for_status()
        broker.stop()
        (data / "topics.json").unlink()
        broker.start()
        topic = client.get(path("v1", "topics", "WIDE"))
        assert topic.status_code == 200 and len(topic.json()["queues"]) == 5, topic.text
