"""`halfmq bench faststream`'s decisions: how many rounds, and the framework's rate over the SDK's."""

from __future__ import annotations

from halfmq.bench.scenarios.faststream import body, overhead, rounds


def test_rounds_are_never_fewer_than_two() -> None:
    assert rounds(1) == 2 and rounds(2) == 2 and rounds(5) == 5


def test_overhead_is_the_framework_median_over_the_sdk_median() -> None:
    assert overhead([800.0, 900.0, 700.0], [1000.0, 1000.0, 1000.0]) == 0.8
    assert overhead([1000.0, 1000.0], [1000.0, 1000.0]) == 1.0


def test_overhead_is_unknown_without_an_sdk_figure() -> None:
    assert overhead([800.0], []) is None and overhead([800.0], [0.0]) is None


def test_both_sides_send_the_same_order_like_body() -> None:
    assert body(7) == {"order_id": "o00000007", "user_id": "u0007", "amount": "12.34", "kind": "order"}
