"""FifoGate: one head per message group, the rest waiting in queue order, the next made ready when the head settles."""

from __future__ import annotations

from halfmq.broker.delivery.fifo_gate import FifoGate


def test_the_first_message_of_a_group_is_its_head_and_the_later_ones_wait() -> None:
    gate = FifoGate()
    assert gate.admit("g", 0)
    assert not gate.admit("g", 1)
    assert not gate.admit("g", 2)
    assert (gate.waiting_count, gate.groups_waiting) == (2, 1)


def test_other_groups_are_not_held_by_a_busy_one() -> None:
    gate = FifoGate()
    assert gate.admit("a", 0)
    assert gate.admit("b", 1)
    assert not gate.admit("a", 2)
    assert gate.admit("c", 3)


def test_settling_the_head_makes_the_next_message_of_its_group_ready_in_queue_order() -> None:
    gate = FifoGate()
    gate.admit("g", 0), gate.admit("g", 3), gate.admit("g", 7)
    assert gate.settle("g", 0, after=100)
    assert list(gate.ready) == [(3, "g", 100)] and gate.busy["g"] == 3
    gate.ready.clear()
    assert gate.settle("g", 3, after=200)
    assert list(gate.ready) == [(7, "g", 200)] and gate.waiting_count == 0 and gate.groups_waiting == 0


def test_settling_the_last_message_frees_the_group() -> None:
    gate = FifoGate()
    gate.admit("g", 0)
    assert not gate.settle("g", 0)
    assert gate.admit("g", 1)


def test_settling_an_offset_that_is_not_the_head_changes_nothing() -> None:
    gate = FifoGate()
    gate.admit("g", 0), gate.admit("g", 1)
    assert not gate.settle("g", 1)
    assert not gate.settle("other", 0)
    assert gate.busy == {"g": 0} and gate.waiting_count == 1 and not gate.ready
