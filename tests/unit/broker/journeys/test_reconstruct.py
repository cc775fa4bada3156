"""A journey from plain records: no store, no broker."""

from __future__ import annotations

from halfmq.broker.journeys.reconstruct import fair_share, journey, summaries, summary
from halfmq.broker.store.record import StoredMessage

HALF, OP, TIMER = "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC", "RMQ_SYS_WHEEL_TIMER"


def rec(topic: str, offset: int, at: int, queue_offset: int = 0, **props: str) -> StoredMessage:
    return StoredMessage(topic, 0, queue_offset, offset, at, at, props, b"")


def half_records() -> list[StoredMessage]:
    tx = {"TRANSACTION_ID": "tx1", "PGROUP": "pg"}
    return [
        rec(HALF, 100, 1_000, UNIQ_KEY="m1", KEYS="order-1", REAL_TOPIC="ORDERS", REAL_QID="1", **tx),
        rec(OP, 200, 2_000, OP="check", TRANSACTION_CHECK_TIMES="1", LAST_ANSWER="unknown", **tx),
        rec(OP, 300, 3_000, OP="check", TRANSACTION_CHECK_TIMES="2", LAST_ANSWER="commit", **tx),
        rec("ORDERS", 400, 3_000, queue_offset=5, UNIQ_KEY="m1", KEYS="order-1", **tx),
        rec(OP, 450, 3_000, OP="commit", **tx),
    ]


def test_a_committed_half_reads_half_stored_each_check_with_its_answer_committed_then_acked() -> None:
    found = journey("m1", half_records(), {"billing": 6, "audit": 5})
    assert found is not None
    assert [(e.kind.value, e.answer) for e in found.events] == [
        ("half_stored", None), ("checked", "unknown"), ("checked", "commit"), ("committed", None), ("acked", None)]
    assert found.events[-1].group == "billing"  # audit's offset is at the message: not acked yet
    assert (found.message.topic, found.message.queue_id, found.message.queue_offset) == ("ORDERS", 0, 5)
    assert found.message.state == "visible" and found.message.keys == ["order-1"]
    assert found.events[3].queue_offset == 5


def test_a_pending_half_is_at_its_real_topic_without_a_queue_offset() -> None:
    found = summary("m1", half_records()[:2])
    assert found is not None
    assert (found.topic, found.queue_id, found.queue_offset, found.state) == ("ORDERS", 1, None, "pending")


def test_a_rolled_back_half_says_so() -> None:
    records = [*half_records()[:1], rec(OP, 200, 2_000, OP="rollback", TRANSACTION_ID="tx1", PGROUP="pg")]
    found = journey("m1", records, {})
    assert found is not None
    assert found.message.state == "rolled_back" and found.events[-1].kind.value == "rolled_back"


def test_a_timed_message_reads_timer_stored_then_released_with_its_due_time() -> None:
    records = [rec(TIMER, 100, 1_000, UNIQ_KEY="m2", REAL_TOPIC="ORDERS", REAL_QID="0", TIMER_OUT_MS="61000"),
               rec("ORDERS", 900, 61_005, queue_offset=3, UNIQ_KEY="m2", TIMER_OUT_MS="61000")]
    found = journey("m2", records, {})
    assert found is not None
    assert [(e.kind.value, e.due_ms) for e in found.events] == [("timer_stored", 61_000), ("released", 61_000)]
    assert found.message.deliver_at_ms == 61_000


def test_a_dead_letter_and_its_resent_copy_are_events_of_the_message() -> None:
    records = [rec("ORDERS", 100, 1_000, UNIQ_KEY="m3"),
               rec("%DLQ%billing", 200, 2_000, UNIQ_KEY="m3", CONSUMER_GROUP="billing", DLQ_REASON="max retries"),
               rec("ORDERS", 300, 3_000, queue_offset=1, UNIQ_KEY="m3", DLQ_RESENT_FROM="%DLQ%billing@0")]
    found = journey("m3", records, {})
    assert found is not None
    assert [e.kind.value for e in found.events] == ["sent", "dead_lettered", "resent"]
    assert found.events[1].group == "billing" and found.message.queue_offset == 0


def test_no_record_of_the_message_itself_is_no_journey() -> None:
    assert journey("m9", [rec(OP, 200, 2_000, OP="check", TRANSACTION_ID="tx9")], {}) is None


def test_a_companion_of_the_same_transaction_adds_no_event_to_the_messages_journey() -> None:
    tx = {"TRANSACTION_ID": "tx1", "PGROUP": "pg"}
    companion = [rec(HALF, 150, 1_000, UNIQ_KEY="m9", REAL_TOPIC="DUE", REAL_QID="0", HALF_PART="2/2", **tx),
                 rec(TIMER, 420, 3_000, UNIQ_KEY="m9", REAL_TOPIC="DUE", REAL_QID="0", TIMER_OUT_MS="9000", **tx)]
    found = journey("m1", sorted([*half_records(), *companion], key=lambda r: r.commit_log_offset), {})
    assert found is not None
    assert [e.kind.value for e in found.events] == ["half_stored", "checked", "checked", "committed"]
    due = journey("m9", [*half_records(), *companion], {})
    assert due is not None and [e.kind.value for e in due.events] == ["half_stored", "checked", "checked", "timer_stored", "committed"]


def test_the_messages_among_records_found_by_a_key_are_listed_once_each_newest_first() -> None:
    records = [rec("ORDERS", 400, 3_000, queue_offset=5, UNIQ_KEY="m1", KEYS="k", TRANSACTION_ID="tx1"),
               rec("ORDERS", 300, 2_000, queue_offset=4, UNIQ_KEY="m2", KEYS="k"),
               rec(HALF, 100, 1_000, UNIQ_KEY="m1", KEYS="k", REAL_TOPIC="ORDERS", REAL_QID="0", TRANSACTION_ID="tx1"),
               rec("ORDERS", 50, 500, KEYS="k")]  # without an id: no message to list
    assert [(s.msg_id, s.state) for s in summaries(records)] == [("m1", "visible"), ("m2", "visible")]


def test_a_topic_with_many_messages_cannot_crowd_another_topic_s_one_out_of_a_search() -> None:
    squat = summaries([rec("MALLORY", 1_000 + i, 10_000 + i, queue_offset=i, UNIQ_KEY=f"s{i}", KEYS="k") for i in range(300)])
    victim = summaries([rec("ORDERS", 10, 1_000, UNIQ_KEY="v", KEYS="k")])
    listed = fair_share({"MALLORY": squat, "ORDERS": victim}, 50)
    assert len(listed) == 50 and "v" in [s.msg_id for s in listed]
    assert listed[-1].msg_id == "v"  # still newest first: the victim's is the oldest
    assert [s.msg_id for s in fair_share({"MALLORY": squat}, 3)] == ["s299", "s298", "s297"]
    assert fair_share({}, 10) == []
