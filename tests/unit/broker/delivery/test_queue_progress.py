from halfmq.broker.delivery.backoff import exhausted, retry_delay
from halfmq.broker.delivery.queue_progress import DUE_SLACK, GroupStates, GroupTopic, QueueProgress, stale_due


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


def stalled_queue(window: int) -> QueueProgress:
    """A head of group "stuck" handed out at t=100, and the window behind it filled with that group's messages."""
    p = QueueProgress(committed=0, fifo_window=window)
    assert p.deliver_next(100.0, 30.0, "stuck") is not None
    while p.room() > 0:
        assert p.deliver_next(100.0, 30.0, "stuck") is None  # waits behind the head
    return p


def test_a_queue_stalled_at_its_window_counts_the_seconds_since_the_message_holding_it_was_first_handed_out() -> None:
    p = stalled_queue(window=4)
    assert p.cursor == 4
    assert p.window_stall(now=100.0, max_offset=5) == 0.0
    assert p.window_stall(now=160.5, max_offset=5) == 60.5
    p.redeliver(0, now=200.0, invisible=30.0)  # its redeliveries do not restart the count
    assert p.window_stall(now=3700.0, max_offset=5) == 3600.0


def test_a_full_window_with_nothing_past_it_stalls_nothing() -> None:
    assert stalled_queue(window=4).window_stall(now=500.0, max_offset=4) == 0.0


def test_a_window_not_yet_full_or_without_waiting_messages_is_no_stall() -> None:
    p = QueueProgress(committed=0, fifo_window=4)
    p.deliver_next(100.0, 30.0, "g")
    p.deliver_next(100.0, 30.0, "g")  # waits: the window applies, but only 2 of 4 are read
    assert p.window_stall(now=500.0, max_offset=10) == 0.0
    free = QueueProgress(committed=0, fifo_window=4)
    for _ in range(8):
        free.deliver_new(100.0, 30.0)  # no group waits: no window
    assert free.window_stall(now=500.0, max_offset=10) == 0.0


def test_settling_the_message_holding_the_window_ends_the_stall() -> None:
    p = stalled_queue(window=4)
    p.settle(0, after=0)  # the next of its group becomes ready; committed moves to 1, the window reaches offset 4 again
    assert p.window_stall(now=500.0, max_offset=5) == 0.0
    assert p.lag(0, 5, now=500.0).fifo_window_stalled_seconds == 0.0
    assert stalled_queue(window=4).lag(0, 5, now=130.0).fifo_window_stalled_seconds == 30.0


def test_a_due_heap_is_stale_once_past_twice_its_live_deliveries_and_the_slack() -> None:
    assert not stale_due(DUE_SLACK, 0)
    assert stale_due(DUE_SLACK + 1, 0)
    assert not stale_due(2 * 100 + DUE_SLACK, 100)
    assert stale_due(2 * 100 + DUE_SLACK + 1, 100)


def test_releasing_settled_keeps_one_entry_per_delivery_in_flight_at_its_current_time() -> None:
    state = GroupTopic([QueueProgress(0)])
    queue = state.queues[0]
    for _ in range(DUE_SLACK + 10):
        item = queue.deliver_new(0.0, 30)
        state.due.append((item.visible_at, 0, item.offset, item.nonce))
    for offset in range(1, DUE_SLACK + 10):
        queue.settle(offset)
    queue.postpone(0, 99.0)
    state.release_settled()
    assert state.due == [(99.0, 0, 0, queue.in_flight[0].nonce)]
