"""The console and `halfmq admin` say times as a person reads them: "3 s ago", "in 12 s", "due now", "4 min"."""

from __future__ import annotations

import pytest

from halfmq import human_time

NOW = 1_800_000_000.0


def test_instants_and_spans_read_as_a_person_says_them() -> None:
    assert human_time.when(int((NOW - 3) * 1000), now=NOW) == "3 s ago"
    assert human_time.when(int((NOW + 12) * 1000), now=NOW) == "in 12 s"
    assert human_time.when(int(NOW * 1000), now=NOW) == "now"
    assert human_time.when(int((NOW - 4000) * 1000), now=NOW) == "67 min ago"
    assert human_time.when(int((NOW - 7200) * 1000), now=NOW) == "2 h ago"
    assert human_time.when(int((NOW - 3 * 86400) * 1000), now=NOW) == "3 d ago"
    assert human_time.when(None) == "-" and human_time.duration(None) == "-"
    assert human_time.duration(0.25) == "250 ms" and human_time.duration(42) == "42 s" and human_time.duration(5 * 3600) == "5 h"
    assert human_time.due(int((NOW - 1) * 1000), now=NOW) == "due now"
    assert human_time.due(int((NOW + 30) * 1000), now=NOW) == "in 30 s"


def test_a_duration_is_read_in_seconds_or_with_a_unit() -> None:
    assert [human_time.parse_duration(text) for text in ("30", "30s", "500ms", "15m", "12h", "7d", " 2 w ", "1.5h")] == [
        30.0, 30.0, 0.5, 900.0, 43_200.0, 604_800.0, 1_209_600.0, 5400.0]


@pytest.mark.parametrize("text", ["", "d", "7y", "-1h", "inf", "nan", "1e400s", "12 hours"])
def test_anything_else_is_not_a_duration(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        human_time.parse_duration(text)


def test_an_iso_time_is_read_in_epoch_ms_as_utc_unless_it_names_its_offset() -> None:
    assert human_time.epoch_ms("2026-11-29T07:00:00") == human_time.epoch_ms("2026-11-29T07:00:00Z") == 1_795_935_600_000
    assert human_time.epoch_ms("2026-11-29T08:00:00+01:00") == 1_795_935_600_000
    with pytest.raises(ValueError):
        human_time.epoch_ms("not a time")


def test_a_topics_retention_is_read_as_an_operator_types_it_and_broker_means_the_brokers() -> None:
    assert human_time.retention_ms("12h") == 12 * 3600 * 1000
    assert human_time.retention_bytes("4096") == 4096
    assert human_time.retention_ms("broker") is None and human_time.retention_bytes("broker") is None
    for read, text in ((human_time.retention_ms, "soon"), (human_time.retention_bytes, "12h"), (human_time.retention_ms, "BROKER")):
        with pytest.raises(ValueError):
            read(text)
