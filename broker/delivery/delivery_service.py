"""Broker-managed ("pop") consumption: receive, ack, nack, invisibility, DLQ.

All state lives on the broker's event loop thread; the only I/O is reading
messages from the store and appending DLQ copies and ``acks`` records. An ack is
written to the log (HALFMQ_TXN_STATE, ``store.state_records``) before it settles,
so a broker set's new leader reads it back (``restore_acked``); committed offsets
go to the store's offset table, a checkpoint snapshotted in the background.

The service holds its parts, each with its own state: every group's progress
(group_progress.py), the receipt handles it signs (receipts.py), the long polls
waiting on a topic (arrivals.py), the acks held by open producer transactions
(``held_acks``: held_acks.py) and what operators see of the groups (``views``:
group_views.py).
"""

from __future__ import annotations

import heapq
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from halfmq.broker.messages.names import NameKind, checked_name
from halfmq.broker.store.damaged_records import DamagedEntry
from halfmq.broker.store.message_store import MessageStore, StoreNotWritable
from halfmq.broker.store.record import StoredMessage
from halfmq.broker.store.state_records import acks_record, group_deleted_record, offsets_reset_record
from halfmq.broker.store.topics import CHECK_MAX_TIME_TOPIC, TXN_STATE_TOPIC, dlq_topic
from halfmq.errors import SystemTopicForbidden

from . import dead_letters, journal
from .arrivals import Arrivals
from .backoff import DLQ_RETRY_SECONDS, READY_POLL_SECONDS, DeliveryPolicy, exhausted, retry_delay
from .event_counts import EventCounts
from .fifo_gate import MESSAGE_GROUP
from .group_admission import GroupAdmission
from .group_progress import GroupProgress
from .group_views import GroupViews
from .held_acks import HeldAcks
from .queue_progress import HELD_BY_TRANSACTION, GroupTopic, InFlight, QueueProgress
from .receipt_handle import ReceiptHandle
from .receipts import Receipts

log = logging.getLogger(__name__)

__all__ = ["Delivery", "DeliveryPolicy", "DeliveryService"]


@dataclass(frozen=True, slots=True)
class Delivery:
    message: StoredMessage
    receipt_handle: str
    delivery_attempt: int


class DeliveryService:
    def __init__(self, store: MessageStore, policy: DeliveryPolicy, clock: Callable[[], float] = time.monotonic,
                 *, key: bytes | None = None) -> None:
        """``key``: the data dir's receipt key (see receipt_handle); a bare service makes one of its own."""
        self._store = store
        self._reads = store.visible  # what consumers may see: a broker set's leader stops at its high watermark
        self._policy = policy
        self._journal = journal.writer(store, policy.journal)
        self._clock = clock
        self._receipts = Receipts(key)
        self.arrivals = Arrivals()  # public: a read by offset's long poll (Kafka's Fetch) waits on it too (ManageTopics)
        self._progress = GroupProgress(store, policy.fifo_window, self._receipts.epoch, self.arrivals.wake)
        self.held_acks = HeldAcks(self._progress, clock, self.arrivals.wake, self._counted_ack)
        self.views = GroupViews(store, self._progress, clock)
        self.admission = GroupAdmission(self._progress.states, policy.max_groups)
        self.acks_end = 0  # where the last ``acks`` record written ends: an ack is answered once that is durable
        self.counted = EventCounts()  # events per group and topic since start, for /metrics (the runtime bounds its rows)
        self.damaged_skips = 0
        self.fence: Callable[[], None] = lambda: None  # raises if this node may not hand out now (a set's leader past its lease)
        self._reads.add_listener(self.arrivals.wake)

    def close(self) -> None:
        """End every long poll now (shutdown must not wait for idle consumers)."""
        self.arrivals.close()

    # --- receive ----------------------------------------------------------------
    async def receive(self, group: str, topic: str, max_messages: int, invisible: float, wait: float) -> list[Delivery]:
        checked_name(NameKind.CONSUMER_GROUP, group)
        if topic.startswith("RMQ_SYS_") or topic in (CHECK_MAX_TIME_TOPIC, TXN_STATE_TOPIC):
            raise SystemTopicForbidden(f"{topic} is internal to the broker and cannot be consumed")
        if self.logged_receipt_key is None:
            self.log_receipt_key()  # before the first handle: every node of a set signs and checks with the first leader's
        self.admission.admit(group)
        deadline = self._clock() + wait
        while True:
            state = self._progress.open(group, topic)
            self.fence()  # nothing is awaited from here until the deliveries are returned
            out = self._take(group, topic, state, max_messages, invisible)
            remaining = deadline - self._clock()
            if out or remaining <= 0 or self.arrivals.closing:
                self.counted.add("out", group, topic, n=len(out))
                self._journal(journal.DELIVERED, group, journal.deliveries(topic, out))
                return out
            held = any(progress.gate.ready for progress in state.queues)  # until the high watermark passes an ack
            timeout = min(remaining, READY_POLL_SECONDS) if held else remaining
            if state.due:
                timeout = max(0.0, min(timeout, state.due[0][0] - self._clock()))
            await self.arrivals.wait(topic, timeout)

    def _take(self, group: str, topic: str, state: GroupTopic, limit: int, invisible: float) -> list[Delivery]:
        now = self._clock()
        out: list[Delivery] = []
        self._take_due(group, topic, state, limit, out, now, invisible)
        n = len(state.queues)
        for i in range(n):
            if len(out) >= limit:
                break
            qid = (state.rotation + i) % n
            self._take_ready(group, topic, qid, state, limit, out, now, invisible)
            self._take_new(group, topic, qid, state, limit, out, now, invisible)
        state.rotation = (state.rotation + 1) % max(n, 1)
        return out

    def _take_due(self, group: str, topic: str, state: GroupTopic, limit: int, out: list[Delivery],
                  now: float, invisible: float) -> None:
        """Hand out again the deliveries whose invisible time ran out (or were nacked); one out of attempts goes to the DLQ."""
        while state.due and state.due[0][0] <= now and len(out) < limit:
            _, qid, offset, nonce = heapq.heappop(state.due)
            progress = state.queues[qid]
            item = progress.in_flight.get(offset)
            if item is None or item.nonce != nonce or item.visible_at > now:
                continue  # settled, or re-scheduled since this heap entry was pushed
            message = self._reads.get(topic, qid, offset)
            if message is None:  # damaged since it was delivered (reported by the store)
                self._progress.settle(group, topic, qid, progress, offset)
                continue
            if exhausted(item.deliveries, self._policy.max_reconsume_times):
                try:
                    self._move_to_dlq(group, message, item.deliveries, dead_letters.exhausted_reason(item.deliveries, item.nacked))
                except StoreNotWritable:  # a full disk: the store logs it; try the move again a little later
                    item = progress.postpone(offset, now + DLQ_RETRY_SECONDS)
                    heapq.heappush(state.due, (item.visible_at, qid, offset, item.nonce))
                    continue
                self._progress.settle(group, topic, qid, progress, offset)
                continue
            item = progress.redeliver(offset, now, invisible)
            out.append(self._delivery(group, topic, qid, message, item, state))

    def _take_ready(self, group: str, topic: str, qid: int, state: GroupTopic, limit: int, out: list[Delivery],
                    now: float, invisible: float) -> None:
        """Hand out the message groups' next messages whose predecessor settled (read back one by one)."""
        progress = state.queues[qid]
        while len(out) < limit and (offset := progress.ready_head(self._reads.bound)) is not None:
            message = self._reads.get(topic, qid, offset)
            item = progress.deliver_ready(now, invisible)
            if message is None:  # damaged (the store reports it): passed over as if acked, so the group's next follows
                self.damaged_skips += 1
                self._progress.settle(group, topic, qid, progress, item.offset)
            else:
                out.append(self._delivery(group, topic, qid, message, item, state))

    def _take_new(self, group: str, topic: str, qid: int, state: GroupTopic, limit: int, out: list[Delivery],
                  now: float, invisible: float) -> None:
        """Hand out never-delivered messages of one queue (one of a busy group waits in its gate); a damaged one is
        skipped as if acked, and counted."""
        progress = state.queues[qid]
        self._skip_retained(group, topic, qid, progress, self._reads.queue_range(topic, qid)[0])  # a no-op unless below it
        while True:
            want = min(limit - len(out), self._reads.queue_range(topic, qid)[1] - progress.cursor, progress.room())
            if want <= 0:
                return
            entries = self._reads.read_entries(topic, qid, progress.cursor, want)
            if not entries:
                return
            for entry in entries:
                if entry.queue_offset != progress.cursor:  # below the earliest retained offset: continue from it
                    self._skip_retained(group, topic, qid, progress, entry.queue_offset)
                if progress.pass_acked():
                    continue
                if type(entry) is DamagedEntry:
                    self._skip_damaged(group, topic, qid, progress)
                    continue
                item = progress.deliver_next(now, invisible, entry.properties.get(MESSAGE_GROUP))
                if item is not None:
                    out.append(self._delivery(group, topic, qid, entry, item, state))
                elif progress.room() <= 0:
                    return  # it waits behind its group's head, and the window is full

    def _skip_retained(self, group: str, topic: str, qid: int, progress: QueueProgress, offset: int) -> None:
        """Continue from ``offset`` when the group's cursor is below it: retention deleted what lay between (counted)."""
        skipped = self._progress.continue_from(group, topic, qid, progress, offset)
        if skipped:
            log.warning("group %s continues %s/%d at %d, the earliest retained offset: %d messages were deleted by "
                        "retention before it received them", group, topic, qid, offset, skipped)
            self.counted.add("retention_skip", group, topic, n=skipped)

    def _skip_damaged(self, group: str, topic: str, qid: int, progress: QueueProgress) -> None:
        log.warning("group %s passes over damaged message %s/%d@%d", group, topic, qid, progress.cursor)
        self.damaged_skips += 1
        self._progress.skip(group, topic, qid, progress)

    def _delivery(self, group: str, topic: str, qid: int, message: StoredMessage, item: InFlight, state: GroupTopic) -> Delivery:
        heapq.heappush(state.due, (item.visible_at, qid, item.offset, item.nonce))
        return Delivery(message, self._receipts.sign(group, topic, qid, item.offset, item.nonce), item.deliveries)

    # --- settle -----------------------------------------------------------------
    def ack(self, group: str, topic: str, handles: list[str]) -> list[tuple[str, bool]]:
        """Settle held deliveries (False: expired or settled); RECEIPT_IN_TRANSACTION, settling none, when one of them
        is acked in an open producer transaction: that transaction's end decides it.

        What it settles is written first, as one ``acks`` record (``acks_end`` is where it ends: the caller answers once
        that is durable); a disk that refuses it settles nothing (StoreNotWritable).
        """
        parsed = self._receipts.resolve(group, topic, handles)
        state = self._progress.find(group, topic)  # settling never creates a group: none means nothing is held
        held = []
        for text, h in parsed:
            progress = self._progress.holding(state, h)
            if progress is not None and progress.in_flight[h.offset].visible_at == HELD_BY_TRANSACTION:
                self.held_acks.refuse_if_held(state, h)
            held.append((text, h, progress))
        acked = [(group, topic, h.queue_id, h.offset) for _, h, progress in held if progress is not None]
        if acked:
            _, self.acks_end = self._store.put([acks_record(acked, indexed=self._policy.journal)])
        results = []
        for text, h, progress in held:
            ok = progress is not None and progress.holds(h.offset, h.nonce)  # False for a repeat of a handle just settled
            if ok and progress is not None:
                self._progress.settle(group, topic, h.queue_id, progress, h.offset)
            results.append((text, ok))
            self.counted.add("ack", group, topic, "ok" if ok else "expired")
        return results

    def nack(self, group: str, topic: str, handles: list[str], reason: str | None = None) -> list[tuple[str, bool]]:
        """Make held deliveries visible again after their retry delay (False: expired, settled, or held by a transaction)."""
        parsed = self._receipts.resolve(group, topic, handles)
        state = self._progress.find(group, topic)
        now = self._clock()
        results, nacked = [], []
        for text, h in parsed:
            progress = self._progress.holding(state, h)
            ok = progress is not None and progress.in_flight[h.offset].visible_at != HELD_BY_TRANSACTION
            if ok:
                assert progress is not None and state is not None  # held: a queue of this group's state
                item = progress.in_flight[h.offset]
                item = progress.postpone(h.offset, now + retry_delay(item.deliveries, self._policy.retry_delays))
                item.nacked = True
                heapq.heappush(state.due, (item.visible_at, h.queue_id, h.offset, item.nonce))
                nacked.append((topic, h.queue_id, h.offset, item.deliveries))
            results.append((text, ok))
            self.counted.add("nack", group, topic, "ok" if ok else "expired")
        self._journal(journal.NACKED, group, nacked, reason)
        if nacked:
            self.arrivals.wake(topic)  # wake long-pollers: a zero delay makes it due at once
        return results

    def release(self, group: str, topic: str, handles: list[str]) -> None:
        """Make deliveries that never reached their consumer visible again, attempt not counted."""
        parsed = self._receipts.resolve(group, topic, handles)
        state = self._progress.find(group, topic)
        now = self._clock()
        for _, h in parsed:
            progress = self._progress.holding(state, h)
            if progress is not None and progress.in_flight[h.offset].visible_at != HELD_BY_TRANSACTION:
                assert state is not None  # a held delivery is in this group's state
                item = progress.postpone(h.offset, now)
                item.deliveries -= 1
                heapq.heappush(state.due, (now, h.queue_id, h.offset, item.nonce))
        self.arrivals.wake(topic)

    def change_invisible(self, group: str, topic: str, handle: str, seconds: float) -> bool:
        """Keep a delivery invisible for ``seconds`` from now (RocketMQ's ChangeInvisibleDuration); False if not held."""
        [(_, h)] = self._receipts.resolve(group, topic, [handle])
        state = self._progress.find(group, topic)
        progress = self._progress.holding(state, h)
        if progress is None or state is None or progress.in_flight[h.offset].visible_at == HELD_BY_TRANSACTION:
            return False
        item = progress.postpone(h.offset, self._clock() + max(0.0, seconds))
        heapq.heappush(state.due, (item.visible_at, h.queue_id, h.offset, item.nonce))
        if seconds <= 0:
            self.arrivals.wake(topic)
        return True

    def dead_letter(self, group: str, topic: str, handle: str) -> bool:
        """Move a held delivery to the group's DLQ now and settle it (the consumer gave up on it); False if not held."""
        [(_, h)] = self._receipts.resolve(group, topic, [handle])
        state = self._progress.find(group, topic)
        self.held_acks.refuse_if_held(state, h)
        progress = self._progress.holding(state, h)
        message = self._reads.get(topic, h.queue_id, h.offset) if progress is not None else None
        if progress is None or message is None:
            return False
        self._move_to_dlq(group, message, progress.in_flight[h.offset].deliveries, dead_letters.GIVEN_UP)
        self._progress.settle(group, topic, h.queue_id, progress, h.offset)
        return True

    def _move_to_dlq(self, group: str, message: StoredMessage, deliveries: int, reason: str) -> None:
        target = dlq_topic(group)
        self._store.create_topic(target, 1)
        _, self.acks_end = self._store.put(dead_letters.moved(group, message, deliveries, reason))
        self.counted.add("dlq", group, message.topic)
        log.warning("moved %s/%d@%d to %s after %d deliveries", message.topic, message.queue_id, message.queue_offset, target, deliveries)

    def _counted_ack(self, h: ReceiptHandle) -> None:
        self.counted.add("ack", h.group, h.topic, "ok")

    # --- operators' offset resets ---------------------------------------------
    def positions(self, group: str, topic: str) -> list[tuple[int, int, int]]:
        """Per queue of ``topic``: (queue id, the group's committed offset, its deliveries in flight)."""
        checked_name(NameKind.CONSUMER_GROUP, group)
        return self._progress.positions(group, topic)

    def reset_offsets(self, group: str, topic: str, moves: list[tuple[int, int]]) -> int:
        """Move the group's committed offsets on ``topic`` (queue id, offset): written first as one ``offsets-reset``
        record (a restart and a set's next leader read it back), then applied; the record's end is returned, to be
        waited on durable. What the queues held in flight is forgotten (delivered again from the new offsets)."""
        self.admission.admit(group)
        _, end = self._store.put([offsets_reset_record([(group, topic, qid, offset) for qid, offset in moves])])
        for qid, offset in moves:
            self._progress.reset(group, topic, qid, offset)
        return end

    def in_flight(self, group: str | None = None, *, topic: str | None = None) -> int:
        """The deliveries held by consumers now: the group's on every topic, or every group's of ``topic``."""
        if group is not None:
            return sum(len(p.in_flight) for state in self._progress.states.by_group.get(group, {}).values() for p in state.queues)
        return sum(len(p.in_flight) for (_, t), state in self._progress.states.items() if t == topic for p in state.queues)

    def delete_group(self, group: str) -> int:
        """Forget the group (its progress and committed offsets), written first as a ``group-deleted`` record (a restart
        and a set's next leader read it back); the record's end is returned, to be waited on durable."""
        _, end = self._store.put([group_deleted_record(group)])
        self._progress.forget(group)
        return end

    # --- receipt handles --------------------------------------------------------
    def parse_receipts(self, handles: list[str]) -> list[ReceiptHandle]:
        """Decode and verify ``handles`` (INVALID_RECEIPT_HANDLE for one this broker did not sign); changes nothing.
        How a producer transaction's acks come in (then ``held_acks``)."""
        return self._receipts.parse(handles)

    @property
    def logged_receipt_key(self) -> bytes | None:
        """The receipt key the log names (then it is that one, on every node of a set); None before the first leader wrote
        it. A state snapshot keeps it."""
        return self._receipts.logged_key

    def use_receipt_key(self, key: bytes) -> None:
        """The key the log names (replay): every node of a set signs and checks handles with the first leader's."""
        self._receipts.use_logged_key(key)

    def log_receipt_key(self) -> None:
        """Write this broker's key in the log, once, before it signs its first handle (receive: only a writer receives)."""
        self._receipts.log_key(self._store.put)

    # --- what a replay reads back from the log (producer_transactions.replay) ----
    def restore_acked(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        """At start-up: an ack read back from the log (an ``acks`` record, or a committed producer transaction's)."""
        self._progress.restore_acked(group, topic, queue_id, offset)

    def restore_reset(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        """At start-up: an operator's offset reset read back from the log (an ``offsets-reset`` record)."""
        self._progress.reset(group, topic, queue_id, offset)

    def forget(self, *, group: str | None = None, topic: str | None = None) -> None:
        """A consumer group's deletion read back from the log (a ``group-deleted`` record, at start-up), or a topic's
        (every group's progress and offsets on it go: at its deletion, and from a ``topic-deleted`` record)."""
        if group is not None:
            self._progress.forget(group)
        if topic is not None:
            self._progress.forget_topic(topic)

    def settled(self) -> list[tuple[str, str, int, int, tuple[int, ...]]]:
        """Per queue: committed, and past the gap (store.state_snapshot)."""
        return self._progress.settled()
