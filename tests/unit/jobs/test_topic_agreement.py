"""The topic mode's pure half: ORDER_TOPIC's bodies credited by the service's rule, and their agreement with the ledger."""

from __future__ import annotations

from halfmq.jobs.credit_aggregate import topic_agreement, topic_credits

LEDGER = "order_id string, user_id string, points long"


def bodies(spark, *texts: str):
    return spark.createDataFrame([(t,) for t in texts], "body string")


def test_an_order_earns_its_whole_units_times_the_rate_and_its_refund_takes_them_back(spark) -> None:
    credited = topic_credits(bodies(
        spark,
        '{"order_id": "o1", "user_id": "u1", "amount": "12.99", "created_at": "2026-11-29T10:00:00+00:00"}',
        '{"order_id": "o1", "user_id": "u1", "amount": "12.99", "created_at": "2026-11-29T11:00:00+00:00", "kind": "refund"}',
        '{"order_id": "o2", "user_id": "u2", "amount": "0.50"}',
    ), points_per_unit=3)
    assert sorted(tuple(r) for r in credited.collect()) == [("o1", "u1", -36, "refund"), ("o1", "u1", 36, "order"), ("o2", "u2", 0, "order")]


def test_a_body_the_service_could_never_credit_becomes_no_row(spark) -> None:
    credited = topic_credits(bodies(spark, "not json", '{"order_id": "o1", "user_id": "u1"}', '{"order_id": "o1", "amount": "3"}',
                                    '{"order_id": "o1", "user_id": "u1", "amount": "3", "kind": "gift"}'), points_per_unit=1)
    assert credited.count() == 0


def test_the_same_entries_agree(spark) -> None:
    rows = [("o1", "u1", 10), ("o1", "u1", -10), ("o2", "u2", 4)]
    agreement = topic_agreement(spark.createDataFrame(rows, LEDGER), spark.createDataFrame(list(reversed(rows)), LEDGER))
    assert agreement.agrees
    assert (agreement.messages, agreement.ledger_entries) == (3, 3)


def test_each_kind_of_disagreement_is_named(spark) -> None:
    topic = spark.createDataFrame([("o1", "u1", 10), ("o1", "u1", -10), ("o2", "u2", 4), ("o3", "u3", 5)], LEDGER)
    ledger = spark.createDataFrame([("o1", "u1", 10), ("o2", "u2", 4), ("o4", "u3", 5)], LEDGER)
    agreement = topic_agreement(topic, ledger)
    assert not agreement.agrees
    assert (agreement.only_on_topic, agreement.only_in_ledger, agreement.differing) == (["o3"], ["o4"], ["o1"])
    assert agreement.users_differing == [{"user_id": "u1", "topic_points": 0, "ledger_points": 10}]
    assert agreement.as_dict()["agrees"] is False
