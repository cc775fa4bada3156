"""/metrics' pure decisions: in-flight transactions by age bucket, and which rows a family shows past its limits."""

from __future__ import annotations

import asyncio

from halfmq.broker.delivery.event_counts import OTHER
from halfmq.broker.delivery.queue_progress import QueueLag
from halfmq.broker.observability.operator_metrics import (
    ConsumerReading,
    FollowerLag,
    RowLimits,
    SetReading,
    Slices,
    StateReading,
    age_bucket,
    count_by_age,
    families,
    fold,
    messages_in_name,
    oldest,
    set_families,
    top,
)
from tests.support.fake_clock import FakeClock


def test_an_age_falls_in_the_first_bucket_that_holds_it() -> None:
    assert [age_bucket(s) for s in (0, 10, 10.001, 60, 61, 600, 3600, 3601)] == [
        "le_10s", "le_10s", "le_1m", "le_1m", "le_10m", "le_10m", "le_1h", "gt_1h"]


def test_counts_name_every_bucket_even_empty_ones() -> None:
    now_ms = 10_000_000
    counts = count_by_age([now_ms - 5_000, now_ms - 30_000, now_ms - 7_200_000], now_ms)
    assert counts == {"le_10s": 1, "le_1m": 1, "le_10m": 0, "le_1h": 0, "gt_1h": 1}


# --- rows of their own, and the (other) row -------------------------------------------------------------------

def test_top_keeps_the_highest_values_and_breaks_ties_by_the_order_given() -> None:
    values = {"a": 5, "b": 9, "c": 5, "d": 1}
    assert top(values, 2) == ["b", "a"]
    assert top(values, 2, order=lambda k: k != "c") == ["b", "c"]
    assert top(values, 10) == ["b", "a", "c", "d"]


def test_oldest_keeps_the_first_created_whatever_their_values() -> None:
    assert oldest({"new": 300, "old": 100, "mid": 200, "tie": 100}, 2) == ["old", "tie"]


def test_fold_sums_every_key_not_kept_and_says_none_when_all_are_kept() -> None:
    assert fold({"a": 1, "b": 2, "c": 4}, ["a"]) == ({"a": 1}, 6)
    assert fold({"a": 1}, ["a", "z"]) == ({"a": 1}, None)


def test_a_slice_lets_the_loop_run_each_time_its_time_is_up_and_not_before() -> None:
    clock = FakeClock()
    slices = Slices(seconds=0.002, clock=clock)
    yielded: list[int] = []

    async def read() -> None:
        loop = asyncio.get_running_loop()
        for step in range(6):
            clock.advance(0.001)  # each step of reading takes 1 ms
            ran: list[bool] = []
            loop.call_soon(ran.append, True)  # runs before tick returns only if tick let the loop run
            await slices.tick()
            if ran:
                yielded.append(step)
            await asyncio.sleep(0)  # (let the callback run, if it has not)

    asyncio.run(read())
    assert yielded == [1, 3, 5]


def _reading(topics: int, groups: int) -> StateReading:
    reading = StateReading(scalars=[], groups=groups)
    for i in range(topics):
        reading.topics[f"T{i:03d}"] = 10
        reading.created[f"T{i:03d}"] = 1000 + i
    for g in range(groups):
        reading.consumers.append(ConsumerReading(f"G{g:03d}", "T000", [QueueLag(0, 0, g, g, min(g, 1)), QueueLag(1, 0, 1, 1, 0)]))
        reading.dlq_depths[f"G{g:03d}"] = g % 3
    reading.counted = {("out", "G001", "T000", ""): 4, ("out", OTHER, OTHER, ""): 6}
    reading.counted_pairs = [("G001", "T000")]
    return reading


def _samples(metrics: list) -> dict[str, dict[tuple, float]]:
    out: dict[str, dict[tuple, float]] = {}
    for family in metrics:
        for s in family.samples:
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


def test_past_the_limits_a_family_shows_its_rows_and_one_other_row_holding_the_rest() -> None:
    built = families(_reading(topics=50, groups=40), RowLimits(topics=5, group_topics=3))
    got = _samples(built.metrics)
    assert len(got["halfmq_messages_in_total"]) == 6 and sum(got["halfmq_messages_in_total"].values()) == 500
    assert got["halfmq_messages_in_total"][(("topic", OTHER),)] == 450  # T000..T004 were created first
    lag = got["halfmq_consumer_lag_messages"]
    assert sum(lag.values()) == sum(range(40)) + 40
    assert {dict(k)["consumer_group"] for k in lag} == {"G039", "G038", "G037", OTHER}  # most lag first
    assert built.consumer_rows == [("G039", "T000"), ("G038", "T000"), ("G037", "T000")]
    assert sum(got["halfmq_consumer_inflight_messages"].values()) == 39
    assert len(got["halfmq_dlq_messages"]) == 4 and sum(got["halfmq_dlq_messages"].values()) == sum(g % 3 for g in range(40))
    assert got["halfmq_consumer_group_number"][()] == 40 and got["halfmq_topic_number"][()] == 50


def test_within_the_limits_no_other_row_appears() -> None:
    got = _samples(families(_reading(topics=3, groups=2), RowLimits(topics=5, group_topics=5)).metrics)
    labels = {v for rows in got.values() for key in rows for _, v in key}
    assert "G000" in labels and "T002" in labels
    assert got["halfmq_messages_out_total"][(("consumer_group", OTHER), ("topic", OTHER))] == 6  # counted there already
    assert not any(OTHER in dict(k).values() for k in got["halfmq_consumer_lag_messages"])


def test_every_counted_row_shows_the_base_events_at_zero() -> None:
    got = _samples(families(_reading(topics=1, groups=2), RowLimits(topics=5, group_topics=5)).metrics)
    assert got["halfmq_ack_messages_total"][(("consumer_group", "G001"), ("result", "ok"), ("topic", "T000"))] == 0
    assert got["halfmq_send_to_dlq_messages_total"][(("consumer_group", OTHER), ("topic", OTHER))] == 0


def test_among_equal_lags_the_pairs_already_counting_keep_their_rows() -> None:
    reading = StateReading(scalars=[], groups=3, counted_pairs=[("c", "T")])
    reading.consumers = [ConsumerReading(g, "T", [QueueLag(0, 0, 1, 1, 0)]) for g in "abc"]
    assert families(reading, RowLimits(topics=1, group_topics=1)).consumer_rows == [("c", "T")]


def test_a_fifo_stall_shows_its_longest_queue_and_the_other_row_the_longest_folded_stall_not_a_sum() -> None:
    reading = StateReading(scalars=[], groups=3)
    stalls = {"a": (0.0, 0.0), "b": (90.0, 30.0), "c": (45.0, 0.0)}
    reading.consumers = [ConsumerReading(g, "T", [QueueLag(0, 0, lag, lag, 1, 2, first), QueueLag(1, 0, 1, 1, 0, 0, second)])
                         for (g, (first, second)), lag in zip(stalls.items(), (30, 20, 10), strict=True)]
    got = _samples(families(reading, RowLimits(topics=1, group_topics=1)).metrics)["halfmq_fifo_window_stalled_seconds"]
    assert got == {(("consumer_group", "a"), ("topic", "T")): 0.0, (("consumer_group", OTHER), ("topic", OTHER)): 90.0}


def _set(role: str, in_sync: int | None = 3, failover: float | None = None) -> SetReading:
    followers = (FollowerLag("n2", 0, 0.1), FollowerLag("n3", 4096, 12.5)) if role != "follower" else ()
    return SetReading("n1", role, 4, 2, 3, in_sync if role != "follower" else None, followers, failover)


def test_only_a_follower_counts_the_sends_it_stores_under_the_replica_name() -> None:
    assert messages_in_name(None) == messages_in_name(_set("leader")) == messages_in_name(_set("fenced")) == "halfmq_messages_in"
    assert messages_in_name(_set("follower")) == "halfmq_replica_messages_in"


def test_a_followers_topic_counts_leave_the_messages_in_family_to_the_leader() -> None:
    reading = _reading(topics=2, groups=0)
    reading.set = _set("follower")
    got = _samples(families(reading, RowLimits(topics=5, group_topics=3)).metrics)
    assert "halfmq_messages_in_total" not in got and sum(got["halfmq_replica_messages_in_total"].values()) == 20


def test_every_node_shows_one_role_at_one_and_the_term() -> None:
    got = _samples(list(set_families(_set("follower"))))
    assert got["halfmq_cluster_role"] == {(("role", "leader"),): 0, (("role", "fenced"),): 0, (("role", "follower"),): 1}
    assert got["halfmq_cluster_term"][()] == 4 and got["halfmq_cluster_leader_changes_total"][()] == 2
    assert "halfmq_cluster_in_sync_replicas" not in got and "halfmq_replication_lag_bytes" not in got  # a follower does not know


def test_the_leader_shows_each_followers_lag_and_under_replication_when_one_is_out_of_sync() -> None:
    got = _samples(list(set_families(_set("leader", in_sync=2, failover=0.8))))
    assert got["halfmq_replication_lag_bytes"] == {(("follower", "n2"),): 0, (("follower", "n3"),): 4096}
    assert got["halfmq_replication_lag_seconds"][(("follower", "n3"),)] == 12.5
    assert got["halfmq_cluster_in_sync_replicas"][()] == 2 and got["halfmq_cluster_under_replicated"][()] == 1
    assert got["halfmq_cluster_last_failover_seconds"][()] == 0.8


def test_a_full_in_sync_set_is_not_under_replicated_and_a_first_election_has_no_failover_time() -> None:
    got = _samples(list(set_families(_set("leader"))))
    assert got["halfmq_cluster_under_replicated"][()] == 0 and "halfmq_cluster_last_failover_seconds" not in got
