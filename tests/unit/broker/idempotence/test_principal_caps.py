"""The caps on what one principal's idempotent producers hold: the pure decision, with plain numbers."""

from __future__ import annotations

from halfmq.broker.idempotence.principal_caps import PrincipalCaps, Room, retry_after_seconds, room

CAPS = PrincipalCaps(producer_ids=3, sequences=100, evictable_after_ms=60_000)


def test_a_principal_within_both_caps_takes_what_it_asks() -> None:
    assert room(CAPS, ids=2, sequences=0, more_ids=1, more_sequences=0, least_recent_idle_ms=0) is Room.FITS
    assert room(CAPS, ids=3, sequences=99, more_ids=0, more_sequences=1, least_recent_idle_ms=0) is Room.FITS
    assert room(CAPS, ids=3, sequences=100, more_ids=0, more_sequences=0, least_recent_idle_ms=None) is Room.FITS


def test_past_a_cap_the_least_recently_used_id_is_forgotten_once_idle_long_enough() -> None:
    for ids, sequences, more_ids, more_sequences in ((3, 0, 1, 0), (1, 100, 0, 1)):
        asked = {"ids": ids, "sequences": sequences, "more_ids": more_ids, "more_sequences": more_sequences}
        assert room(CAPS, **asked, least_recent_idle_ms=60_000) is Room.FORGET_LEAST_RECENT
        assert room(CAPS, **asked, least_recent_idle_ms=59_999) is Room.FULL
        assert room(CAPS, **asked, least_recent_idle_ms=None) is Room.FULL  # nothing obtained alone to forget


def test_a_full_principal_is_told_when_its_least_recently_used_id_may_be_forgotten() -> None:
    assert retry_after_seconds(CAPS, 0) == 60
    assert retry_after_seconds(CAPS, 59_001) == 1
    assert retry_after_seconds(CAPS, 59_999) == 1  # never 0: a Retry-After of 0 would be a busy loop
    assert retry_after_seconds(CAPS, None) is None  # held by transactional ids' windows: no time frees it
