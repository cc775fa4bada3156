"""Broker-managed ("pop") consumption: receive, ack, nack, invisibility, DLQ.

All state lives on the broker's event loop thread; the only I/O is reading messages and appending DLQ copies and ``acks``
records (``store.state_records``): an ack is in the log before it settles, so a set's new leader reads it back (``restore_acked``); offsets checkpoint them.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

from halfmq.broker.messages.names import NameKind, checked_name
from halfmq.broker.store.damaged_records import DamagedEntry
from halfmq.broker.store.message_store import MessageStore, StoreNotWritable
from halfmq.broker.store.record import StoredMessage
from halfmq.broker.store.state_records import acks_record, receipt_key_record
from halfmq.broker.store.topics import CHECK_MAX_TIME_TOPIC, TXN_STATE_TOPIC, dlq_topic
from halfmq.errors import ConsumerGroupNotFound, InvalidReceiptHandle, ReceiptInOtherTransaction, ReceiptNotHeld, SystemTopicForbidden, TopicNotFound

from . import dead_letters, journal
from .backoff import DLQ_RETRY_SECONDS, READY_POLL_SECONDS, DeliveryPolicy, exhausted, retry_delay
from .event_counts import EventCounts
from .fifo_gate import MESSAGE_GROUP
from .queue_progress import HELD_BY_TRANSACTION, GroupStates, GroupTopic, InFlight, QueueLag, QueueProgress
from .receipt_handle import KEY_BYTES, ReceiptHandle

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Delivery:
    message: StoredMessage
    receipt_handle: str
    delivery_attempt: int


class DeliveryService:
    def __init__(self, store: MessageStore, policy: DeliveryPolicy, clock: Callable[[], float] = time.monotonic,
                 *, key: bytes | None = None) -> None:
        self._store = store
        self._reads = store.visible  # what consumers may see: a broker set's leader stops at its high watermark
        self._policy = policy
        self._journal = journal.writer(store, policy.journal)
        self._clock = clock
        self._epoch = secrets.token_hex(4)  # per runtime: a handle issued before a restart or a failover answers expired
        self._key = key or secrets.token_bytes(KEY_BYTES)  # the runtime passes the data dir's: see receipt_handle
        self.key_in_log = False  # whether the log names the key (then it is that one, on every node of a set)
        self.acks_end = 0  # where the last ``acks`` record written ends: an ack is answered once that is durable
        self._state = GroupStates()
        self._arrivals: dict[str, asyncio.Event] = {}
        self.counted = EventCounts()  # events per group and topic since start, for /metrics (the runtime bounds its rows)
        self.damaged_skips = 0
        self.fence: Callable[[], None] = lambda: None  # raises if this node may not hand out now (a set's leader past its lease)
        self._closing = False
        self._reads.add_listener(self._on_message)

    def close(self) -> None:
        """End every long poll now (shutdown must not wait for idle consumers)."""
        self._closing = True
        for topic in list(self._arrivals):
            self._on_message(topic, -1)

    # --- arrivals ---------------------------------------------------------------
    def _on_message(self, topic: str, queue_id: int) -> None:
        event = self._arrivals.pop(topic, None)
        if event is not None:
            event.set()

    # --- state ------------------------------------------------------------------
    def _group_topic(self, group: str, topic: str) -> GroupTopic:
        state = self._state.get((group, topic))
        cfg = self._store.topic(topic)
        if cfg is None:
            raise TopicNotFound(f"topic {topic!r} does not exist")
        if state is None:
            state = GroupTopic([])
            self._state[(group, topic)] = state
        while len(state.queues) < cfg.queues:
            qid = len(state.queues)
            committed = self._store.offsets.get(group, topic, qid)
            if committed is None:
                committed = self._store.reads.queue_range(topic, qid)[0]
            state.queues.append(QueueProgress(committed, fifo_window=self._policy.fifo_window))
        return state

    # --- receive ----------------------------------------------------------------
    async def receive(self, group: str, topic: str, max_messages: int, invisible: float, wait: float) -> list[Delivery]:
        checked_name(NameKind.CONSUMER_GROUP, group)
        if topic.startswith("RMQ_SYS_") or topic in (CHECK_MAX_TIME_TOPIC, TXN_STATE_TOPIC):
            raise SystemTopicForbidden(f"{topic} is internal to the broker and cannot be consumed")
        if not self.key_in_log:
            self.log_receipt_key()  # before the first handle: every node of a set signs and checks with the first leader's
        deadline = self._clock() + wait
        while True:
            state = self._group_topic(group, topic)
            self.fence()  # nothing is awaited from here until the deliveries are returned
            out = self._take(group, topic, state, max_messages, invisible)
            remaining = deadline - self._clock()
            if out or remaining <= 0 or self._closing:
                self.counted.add("out", group, topic, n=len(out))
                self._journal(journal.DELIVERED, group, journal.deliveries(topic, out))
                return out
            held = any(progress.gate.ready for progress in state.queues)  # until the high watermark passes an ack
            timeout = min(remaining, READY_POLL_SECONDS) if held else remaining
            if state.due:
                timeout = max(0.0, min(timeout, state.due[0][0] - self._clock()))
            event = self._arrivals.setdefault(topic, asyncio.Event())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), timeout)

    def _take(self, group: str, topic: str, state: GroupTopic, limit: int, invisible: float) -> list[Delivery]:
        now = self._clock()
        out: list[Delivery] = []
        while state.due and state.due[0][0] <= now and len(out) < limit:
            _, qid, offset, nonce = heapq.heappop(state.due)
            progress = state.queues[qid]
            item = progress.in_flight.get(offset)
            if item is None or item.nonce != nonce or item.visible_at > now:
                continue  # settled, or re-scheduled since this heap entry was pushed
            message = self._reads.get(topic, qid, offset)
            if message is None:  # damaged since it was delivered (reported by the store)
                self._settle(group, topic, qid, progress, offset)
                continue
            if exhausted(item.deliveries, self._policy.max_reconsume_times):
                try:
                    self._move_to_dlq(group, message, item.deliveries, dead_letters.exhausted_reason(item.deliveries, item.nacked))
                except StoreNotWritable:  # a full disk: the store logs it; try the move again a little later
                    item = progress.postpone(offset, now + DLQ_RETRY_SECONDS)
                    heapq.heappush(state.due, (item.visible_at, qid, offset, item.nonce))
                    continue
                self._settle(group, topic, qid, progress, offset)
                continue
            item = progress.redeliver(offset, now, invisible)
            out.append(self._delivery(group, topic, qid, message, item, state))
        n = len(state.queues)
        for i in range(n):
            if len(out) >= limit:
                break
            qid = (state.rotation + i) % n
            self._take_ready(group, topic, qid, state, limit, out, now, invisible)
            self._take_new(group, topic, qid, state, limit, out, now, invisible)
        state.rotation = (state.rotation + 1) % max(n, 1)
        return out

    def _take_ready(self, group: str, topic: str, qid: int, state: GroupTopic, limit: int, out: list[Delivery],
                    now: float, invisible: float) -> None:
        """Hand out the message groups' next messages whose predecessor settled (read back one by one)."""
        progress = state.queues[qid]
        while len(out) < limit and (offset := progress.ready_head(self._reads.bound)) is not None:
            message = self._reads.get(topic, qid, offset)
            item = progress.deliver_ready(now, invisible)
            if message is None:  # damaged (the store reports it): passed over as if acked, so the group's next follows
                self.damaged_skips += 1
                self._settle(group, topic, qid, progress, item.offset)
            else:
                out.append(self._delivery(group, topic, qid, message, item, state))

    def _take_new(self, group: str, topic: str, qid: int, state: GroupTopic, limit: int, out: list[Delivery],
                  now: float, invisible: float) -> None:
        """Hand out never-delivered messages of one queue (one of a busy group waits in its gate); a damaged one is skipped as if acked, and counted."""
        progress = state.queues[qid]
        while True:
            want = min(limit - len(out), self._reads.queue_range(topic, qid)[1] - progress.cursor, progress.room())
            if want <= 0:
                return
            entries = self._reads.read_entries(topic, qid, progress.cursor, want)
            if not entries:
                return
            for entry in entries:
                if entry.queue_offset != progress.cursor:
                    progress.cursor = entry.queue_offset  # below min offset: skip what retention removed
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

    def _skip_damaged(self, group: str, topic: str, qid: int, progress: QueueProgress) -> None:
        log.warning("group %s passes over damaged message %s/%d@%d", group, topic, qid, progress.cursor)
        self.damaged_skips += 1
        if progress.skip():
            self._store.offsets.commit(group, topic, qid, progress.committed)

    def _delivery(self, group: str, topic: str, qid: int, message: StoredMessage, item: InFlight, state: GroupTopic) -> Delivery:
        heapq.heappush(state.due, (item.visible_at, qid, item.offset, item.nonce))
        handle = ReceiptHandle(group, topic, qid, item.offset, item.nonce, self._epoch).encode(self._key)
        return Delivery(message, handle, item.deliveries)

    # --- settle -----------------------------------------------------------------
    def _resolve(self, group: str, topic: str, handles: list[str]) -> list[tuple[str, ReceiptHandle]]:
        parsed = []
        for text in handles:
            handle = ReceiptHandle.decode(text, self._key)
            if handle.group != group or handle.topic != topic:
                raise InvalidReceiptHandle(f"receipt handle belongs to {handle.group}/{handle.topic}, not {group}/{topic}")
            parsed.append((text, handle))
        return parsed

    def _held(self, state: GroupTopic | None, h: ReceiptHandle) -> QueueProgress | None:
        """The queue still holding the delivery ``h`` names, or None when it is expired (or settled)."""
        if state is None or h.epoch != self._epoch or not 0 <= h.queue_id < len(state.queues):
            return None
        progress = state.queues[h.queue_id]
        return progress if progress.holds(h.offset, h.nonce) else None

    def ack(self, group: str, topic: str, handles: list[str]) -> list[tuple[str, bool]]:
        """Settle held deliveries (False: expired or settled); RECEIPT_IN_TRANSACTION, settling none, when one of them
        is acked in an open producer transaction: that transaction's end decides it. What it settles is written first,
        as one ``acks`` record ending at ``acks_end``; a disk that refuses it settles nothing (StoreNotWritable)."""
        parsed = self._resolve(group, topic, handles)
        state = self._state.get((group, topic))  # settling never creates a group: none means nothing is held
        held = []
        for text, h in parsed:
            progress = self._held(state, h)
            if progress is not None and progress.in_flight[h.offset].visible_at == HELD_BY_TRANSACTION:
                self._refuse_if_in_transaction(state, h)
            held.append((text, h, progress))
        acked = [(group, topic, h.queue_id, h.offset) for _, h, progress in held if progress is not None]
        if acked:
            _, self.acks_end = self._store.put([acks_record(acked, indexed=self._policy.journal)])
        results = []
        for text, h, progress in held:
            ok = progress is not None and progress.holds(h.offset, h.nonce)  # False for a repeat of a handle just settled
            if ok and progress is not None:
                self._settle(group, topic, h.queue_id, progress, h.offset)
            results.append((text, ok))
            self.counted.add("ack", group, topic, "ok" if ok else "expired")
        return results

    def _refuse_if_in_transaction(self, state: GroupTopic | None, h: ReceiptHandle) -> None:
        progress = self._held(state, h)
        if progress is not None and progress.in_flight[h.offset].visible_at == HELD_BY_TRANSACTION:
            raise ReceiptInOtherTransaction(f"{h.group}/{h.topic}/{h.queue_id}@{h.offset} is acked in an open producer "
                                            "transaction: its commit settles it, its abort gives it back")

    def nack(self, group: str, topic: str, handles: list[str], reason: str | None = None) -> list[tuple[str, bool]]:
        parsed = self._resolve(group, topic, handles)
        state = self._state.get((group, topic))
        now = self._clock()
        results, nacked = [], []
        for text, h in parsed:
            progress = self._held(state, h)
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
            self._on_message(topic, -1)  # wake long-pollers: a zero delay makes it due at once
        return results

    def release(self, group: str, topic: str, handles: list[str]) -> None:
        """Make deliveries that never reached their consumer visible again, attempt not counted."""
        parsed = self._resolve(group, topic, handles)
        state = self._state.get((group, topic))
        now = self._clock()
        for _, h in parsed:
            progress = self._held(state, h)
            if progress is not None and progress.in_flight[h.offset].visible_at != HELD_BY_TRANSACTION:
                assert state is not None  # a held delivery is in this group's state
                item = progress.postpone(h.offset, now)
                item.deliveries -= 1
                heapq.heappush(state.due, (now, h.queue_id, h.offset, item.nonce))
        self._on_message(topic, -1)

    def change_invisible(self, group: str, topic: str, handle: str, seconds: float) -> bool:
        """Keep a delivery invisible for ``seconds`` from now (RocketMQ's ChangeInvisibleDuration); False if not held."""
        [(_, h)] = self._resolve(group, topic, [handle])
        state = self._state.get((group, topic))
        progress = self._held(state, h)
        if progress is None or state is None or progress.in_flight[h.offset].visible_at == HELD_BY_TRANSACTION:
            return False
        item = progress.postpone(h.offset, self._clock() + max(0.0, seconds))
        heapq.heappush(state.due, (item.visible_at, h.queue_id, h.offset, item.nonce))
        if seconds <= 0:
            self._on_message(topic, -1)
        return True

    def dead_letter(self, group: str, topic: str, handle: str) -> bool:
        """Move a held delivery to the group's DLQ now and settle it (the consumer gave up on it); False if not held."""
        [(_, h)] = self._resolve(group, topic, [handle])
        state = self._state.get((group, topic))
        self._refuse_if_in_transaction(state, h)
        progress = self._held(state, h)
        message = self._reads.get(topic, h.queue_id, h.offset) if progress is not None else None
        if progress is None or message is None:
            return False
        self._move_to_dlq(group, message, progress.in_flight[h.offset].deliveries, dead_letters.GIVEN_UP)
        self._settle(group, topic, h.queue_id, progress, h.offset)
        return True

    # --- the receipt key, in the log ----------------------------------------
    def use_receipt_key(self, key: bytes) -> None:
        """The key the log names (replay): every node of a set signs and checks handles with the first leader's."""
        self._key = key
        self.key_in_log = True

    def log_receipt_key(self) -> None:
        """Write this broker's key in the log, once, before it signs its first handle (receive: only a writer receives)."""
        self._store.put([receipt_key_record(self._key)])
        self.key_in_log = True

    # --- acks inside a producer transaction (DESIGN section 11) -----------------
    def parse_receipts(self, handles: list[str]) -> list[ReceiptHandle]:
        """Decode and verify ``handles`` (INVALID_RECEIPT_HANDLE for one this broker did not sign); changes nothing."""
        return [ReceiptHandle.decode(text, self._key) for text in handles]

    def check_held(self, receipts: list[ReceiptHandle]) -> None:
        """RECEIPT_EXPIRED (409) unless every receipt still names a delivery in flight; changes nothing."""
        for h in receipts:
            if self._held(self._state.get((h.group, h.topic)), h) is None:
                raise ReceiptNotHeld(f"receipt for {h.group}/{h.topic}/{h.queue_id}@{h.offset} is expired or settled",
                                     queue_id=h.queue_id, offset=h.offset)

    def hold(self, receipts: list[ReceiptHandle]) -> None:
        """Keep the deliveries invisible to their group until ``settle_held`` or ``release_held`` (a transaction's end)."""
        self.check_held(receipts)
        for h in receipts:
            self._state[(h.group, h.topic)].queues[h.queue_id].postpone(h.offset, HELD_BY_TRANSACTION)

    def settle_held(self, receipts: list[ReceiptHandle]) -> None:
        """The transaction committed: its acks take effect."""
        for h in receipts:
            state = self._state.get((h.group, h.topic))
            progress = self._held(state, h)
            if progress is not None:
                self._settle(h.group, h.topic, h.queue_id, progress, h.offset)
                self.counted.add("ack", h.group, h.topic, "ok")

    def release_held(self, receipts: list[ReceiptHandle]) -> None:
        """The transaction aborted: the acked deliveries become deliverable again at once (the attempt counts)."""
        now = self._clock()
        for h in receipts:
            state = self._state.get((h.group, h.topic))
            progress = self._held(state, h)
            if progress is not None and state is not None:
                item = progress.postpone(h.offset, now)
                heapq.heappush(state.due, (now, h.queue_id, h.offset, item.nonce))
                self._on_message(h.topic, -1)

    def restore_acked(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        """At start-up: an ack read back from the log (an ``acks`` record, or a committed producer transaction's), which
        the offsets file may not hold yet (it is a checkpoint, written about once a second, and a follower's is older)."""
        try:
            state = self._group_topic(group, topic)
        except TopicNotFound:
            return
        if queue_id < len(state.queues):
            self._settle(group, topic, queue_id, state.queues[queue_id], offset)

    def settled(self) -> list[tuple[str, str, int, int, tuple[int, ...]]]:  # per queue: committed, past the gap (acks_checkpoint)
        return [(g, t, qid, p.committed, tuple(sorted(p.acked))) for (g, t), state in self._state.items() for qid, p in enumerate(state.queues)]

    def _settle(self, group: str, topic: str, qid: int, progress: QueueProgress, offset: int) -> None:
        if progress.settle(offset, self._store.commit_log.end_offset):  # its ack or DLQ move is in the log before the end
            self._store.offsets.commit(group, topic, qid, progress.committed)
        if progress.gate.ready:
            self._on_message(topic, -1)  # the next message of its group may be handed out: wake long polls

    def _move_to_dlq(self, group: str, message: StoredMessage, deliveries: int, reason: str) -> None:
        target = dlq_topic(group)
        self._store.create_topic(target, 1)
        _, self.acks_end = self._store.put(dead_letters.moved(group, message, deliveries, reason))
        self.counted.add("dlq", group, message.topic)
        log.warning("moved %s/%d@%d to %s after %d deliveries", message.topic, message.queue_id, message.queue_offset, target, deliveries)

    # --- introspection ----------------------------------------------------------
    def group_lag(self, group: str) -> dict[str, list[QueueLag]]:
        topics = set(self._store.offsets.topics_of(group)) | set(self._state.by_group.get(group, ()))
        if not topics:
            raise ConsumerGroupNotFound(f"consumer group {group!r} has not consumed anything")
        return {topic: [p.lag(qid, self._store.reads.queue_range(topic, qid)[1], self._clock()) for qid, p in enumerate(self._group_topic(group, topic).queues)]
                for topic in sorted(topics) if self._store.topic(topic) is not None}

    def groups(self) -> list[str]:
        """Every group that has consumed or committed anything (operators' listings)."""
        return sorted(set(self._store.offsets.groups()) | set(self._state.by_group))

    def retrying(self, group: str) -> int:
        """The group's in-flight deliveries past their first attempt (nacked or timed out before)."""
        return sum(1 for state in self._state.by_group.get(group, {}).values()
                   for progress in state.queues for item in progress.in_flight.values() if item.deliveries > 1)
