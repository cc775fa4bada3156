import logging
from pathlib import Path

import pytest

from halfmq.broker.half_messages.producer_registry import ProducerRegistry

from .fakes import FakeClock


def test_registration_expires_without_heartbeats() -> None:
    clock = FakeClock()
    reg = ProducerRegistry(None, expiry=120, clock=clock)
    reg.heartbeat("pg", "a", "http://127.0.0.1/a")
    clock.advance(119)
    assert [e.client_id for e in reg.live("pg")] == ["a"]
    clock.advance(2)
    assert reg.live("pg") == []


def test_heartbeat_renews_the_registration() -> None:
    clock = FakeClock()
    reg = ProducerRegistry(None, expiry=10, clock=clock)
    reg.heartbeat("pg", "a", "http://127.0.0.1/a")
    for _ in range(5):
        clock.advance(8)
        reg.heartbeat("pg", "a", "http://127.0.0.1/a")
    assert len(reg.live("pg")) == 1


def test_check_backs_rotate_round_robin_over_live_producers() -> None:
    reg = ProducerRegistry(None, expiry=10, clock=FakeClock())
    for cid in "abc":
        reg.heartbeat("pg", cid, f"http://127.0.0.1/{cid}")
    firsts = [reg.rotation("pg")[0].client_id for _ in range(6)]
    assert firsts == ["a", "b", "c", "a", "b", "c"]
    assert sorted(e.client_id for e in reg.rotation("pg")) == ["a", "b", "c"]


def test_producer_without_check_url_is_not_asked() -> None:
    reg = ProducerRegistry(None, expiry=10, clock=FakeClock())
    reg.heartbeat("pg", "a", None)
    assert reg.live("pg") == []


def test_membership_survives_a_restart_with_a_fresh_expiry(tmp_path: Path) -> None:
    clock = FakeClock()
    reg = ProducerRegistry(tmp_path / "producers.json", expiry=10, clock=clock)
    reg.heartbeat("pg", "a", "http://127.0.0.1/a", "127.0.0.1")
    clock.advance(9)
    again = ProducerRegistry(tmp_path / "producers.json", expiry=10, clock=clock)
    clock.advance(9)
    assert [(e.client_id, e.address) for e in again.live("pg")] == [("a", "127.0.0.1")]


def _block_snapshots(path: Path) -> None:
    """Make the next snapshot fail as a full or broken disk would: its temp file's name is taken by a directory."""
    (path.parent / (path.name + ".tmp")).mkdir()


def test_a_heartbeat_whose_snapshot_fails_is_kept_in_memory_logged_once_and_written_with_the_next_change(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "producers.json"
    reg = ProducerRegistry(path, expiry=10, clock=FakeClock())
    reg.heartbeat("pg", "a", "http://127.0.0.1/a", "127.0.0.1")
    _block_snapshots(path)
    with caplog.at_level(logging.WARNING):
        reg.heartbeat("pg", "b", "http://127.0.0.1/b", "127.0.0.1")
        reg.heartbeat("pg", "a", "http://127.0.0.1/moved", "127.0.0.1")
    assert [(e.client_id, e.check_url) for e in reg.live("pg")] == [("a", "http://127.0.0.1/moved"), ("b", "http://127.0.0.1/b")]
    assert len([r for r in caplog.records if str(path) in r.getMessage()]) == 1
    assert [e.client_id for e in ProducerRegistry(path, expiry=10, clock=FakeClock()).live("pg")] == ["a"]
    (path.parent / (path.name + ".tmp")).rmdir()
    reg.heartbeat("pg", "c", "http://127.0.0.1/c", "127.0.0.1")
    again = ProducerRegistry(path, expiry=10, clock=FakeClock())
    assert sorted((e.client_id, e.check_url) for e in again.live("pg")) == [
        ("a", "http://127.0.0.1/moved"), ("b", "http://127.0.0.1/b"), ("c", "http://127.0.0.1/c")]


def test_expiry_whose_snapshot_fails_still_expires_and_answers(tmp_path: Path) -> None:
    # Expiry happens while the check service asks who is live: a failed snapshot there must not raise
    # into the check round (the next membership change writes it again).
    clock = FakeClock()
    path = tmp_path / "producers.json"
    reg = ProducerRegistry(path, expiry=10, clock=clock)
    reg.heartbeat("pg", "a", "http://127.0.0.1/a")
    reg.heartbeat("pg", "b", "http://127.0.0.1/b")
    _block_snapshots(path)
    clock.advance(8)
    reg.heartbeat("pg", "a", "http://127.0.0.1/a")  # unchanged: no snapshot needed
    clock.advance(3)
    assert [e.client_id for e in reg.live("pg")] == ["a"]
    assert list(reg.groups()) == ["pg"]


def test_a_damaged_registry_file_starts_empty_with_one_warning_naming_it(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "producers.json"
    path.write_text('{"producers": [{"group": "pg", "cli')
    with caplog.at_level(logging.WARNING):
        registry = ProducerRegistry(path, expiry=30)
    assert registry.groups() == {}
    assert [r for r in caplog.records if str(path) in r.getMessage()] and len(caplog.records) == 1


def test_a_saved_check_url_without_a_checked_address_is_not_restored(tmp_path: Path) -> None:
    (tmp_path / "producers.json").write_text('{"producers": [{"group": "pg", "client_id": "a", "check_url": "http://order:8001/c"}]}')
    assert ProducerRegistry(tmp_path / "producers.json", expiry=10, clock=FakeClock()).live("pg") == []


def test_a_heartbeat_with_the_same_url_finds_the_address_checked_at_registration() -> None:
    clock = FakeClock()
    reg = ProducerRegistry(None, expiry=10, clock=clock)
    reg.heartbeat("pg", "a", "http://order:8001/c", "172.18.0.5")
    assert reg.registered("pg", "a", "http://order:8001/c").address == "172.18.0.5"
    assert reg.registered("pg", "a", "http://order:8001/other") is None  # a new URL is checked again
    assert reg.registered("pg", "b", "http://order:8001/c") is None
    clock.advance(11)
    assert reg.registered("pg", "a", "http://order:8001/c") is None  # expired: registering again resolves again


def test_registrations_and_expiries_are_written_to_the_log_and_heartbeats_are_not(tmp_path: Path) -> None:
    from halfmq.broker.store import state_records as state
    from halfmq.broker.store.message_store import MessageStore, StoreConfig
    from halfmq.broker.store.topics import TXN_STATE_TOPIC

    store = MessageStore(StoreConfig(tmp_path))
    try:
        clock = FakeClock()
        reg = ProducerRegistry(None, expiry=10, clock=clock, store=store)
        assert reg.heartbeat("pg", "a", "http://127.0.0.1/a", "127.0.0.1:80") is not None  # a registration: its record's end
        assert reg.heartbeat("pg", "a", "http://127.0.0.1/a", "127.0.0.1:80") is None  # a heartbeat: nothing written
        reg.heartbeat("pg", "b", "http://127.0.0.1/b", "127.0.0.1:80")
        clock.advance(8)
        reg.heartbeat("pg", "a", "http://127.0.0.1/a", "127.0.0.1:80")
        clock.advance(3)
        assert [e.client_id for e in reg.live("pg")] == ["a"]  # b expired
        written = [state.producer_of(r.properties) for r in store.reads.intact_records(TXN_STATE_TOPIC, 0, 0)]
        assert [(r.client_id, r.expired) for r in written] == [("a", False), ("b", False), ("b", True)]
        rebuilt = ProducerRegistry(None, expiry=10, clock=FakeClock())
        for record in written:
            rebuilt.replay(record)
        assert [(e.client_id, e.check_url, e.address) for e in rebuilt.live("pg")] == [("a", "http://127.0.0.1/a", "127.0.0.1:80")]
    finally:
        store.close()
