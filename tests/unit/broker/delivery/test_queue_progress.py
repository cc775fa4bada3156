from halfmq.broker.delivery.backoff import exhausted, retry_delay
from halfmq.broker.delivery.queue_progress import GroupStates, GroupTopic, QueueProgress


def test_committed_offset_advances_only_over_contiguous_acks() -> None:
    p = QueueProgress(committed=0)
    items = [p.deliver_new(now=0, invisible=30) for _ in range(4)]
    assert [i.offset for i in items] == [0, 1, 2, 3]
    assert p.settle(2) is False and p.committed == 0
    assert p.settle(0) is True and p.committed == 1
    assert p.settle(1) is True and p.committed == 3
    assert p.acked == set()


def test_redelivery_changes_the_nonce_so_old_receipts_no_longer_hold() -> None:
    p = QueueProgress(committed=5)
    first = p.deliver_new(now=0, invisible=1)
    old_nonce = first.nonce
    again = p.redeliver(5, now=2, invisible=1)
    assert again.deliveries == 2 and again.visible_at == 3
    assert not p.holds(5, old_nonce)
    assert p.holds(5, again.nonce)


def test_settling_below_the_committed_offset_changes_nothing() -> None:
    p = QueueProgress(committed=10)
    assert p.settle(3) is False
    assert p.committed == 10 and p.acked == set()


def test_retry_delay_follows_the_schedule_and_stays_at_its_last_level() -> None:
    delays = [10, 30, 60]
    assert [retry_delay(n, delays) for n in (1, 2, 3, 4, 20)] == [10, 30, 60, 60, 60]
    assert retry_delay(1, []) == 0


def test_a_message_is_exhausted_after_one_plus_max_reconsume_deliveries() -> None:
    assert not exhausted(3, max_reconsume_times=3)
    assert exhausted(4, max_reconsume_times=3)
    assert exhausted(1, max_reconsume_times=0)


def test_a_skipped_offset_counts_as_settled_so_the_commit_passes_it() -> None:
    p = QueueProgress(committed=0)
    first = p.deliver_new(now=0, invisible=30)
    assert not p.skip()  # offset 1 skipped while 0 is still in flight
    third = p.deliver_new(now=0, invisible=30)
    assert third.offset == 2
    p.settle(first.offset)
    assert p.committed == 2
    p.settle(third.offset)
    assert p.committed == 3


def test_offsets_acked_before_delivery_are_passed_over_not_handed_out() -> None:
    from halfmq.broker.delivery.queue_progress import QueueProgress

    progress = QueueProgress(0)
    assert progress.settle(1) is False  # acked by a committed producer transaction, restored at start-up
    assert progress.pass_acked() is False
    progress.deliver_new(0.0, 30.0)
    assert progress.pass_acked() is True and progress.cursor == 2


def test_group_states_are_found_by_pair_and_by_group() -> None:
    states = GroupStates()
    a, b, c = GroupTopic([]), GroupTopic([]), GroupTopic([])
    states["g1", "T1"], states["g1", "T2"], states["g2", "T1"] = a, b, c
    assert states["g1", "T2"] is b and states.get(("g3", "T1")) is None
    assert states.by_group == {"g1": {"T1": a, "T2": b}, "g2": {"T1": c}}
