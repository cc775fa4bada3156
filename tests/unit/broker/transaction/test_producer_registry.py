from pathlib import Path

from broker.transaction.producer_registry import ProducerRegistry

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
