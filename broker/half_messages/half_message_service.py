"""Half messages, ending them, and the durable index transaction id → state.

Storage follows RocketMQ: half messages live in RMQ_SYS_TRANS_HALF_TOPIC queue 0
with their real topic in REAL_TOPIC/REAL_QID; every decision is an op record in
RMQ_SYS_TRANS_OP_HALF_TOPIC queue 0. A commit writes the final message and its op
record as ONE atomic write group, so no crash can leave one without the other.

A half send may carry companions (halfmq's ``also``, not RocketMQ's): one half record each, with the same
TRANSACTION_ID and HALF_PART i/n, in the half's write group. The transaction is the first half's (its id,
offsets, check-backs); a commit writes every final (each routed on its own, so a delay starts at the commit)
and the op as one write group, a rollback none. The parts are found again by walking the group in the log.

Unlike RocketMQ, check-backs do not re-append the whole half message: a small
"check" op record carries the new check count, so the log grows by at most
``transaction_check_max`` small records per transaction.

On start the index is rebuilt from the half queue (from the lowest unresolved
half offset) and the op queue (from the op offset when that half arrived, or the
retention window, whichever is older). Resolved transactions are remembered for
``retention`` seconds so a late or repeated end still gets the first result.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence

from halfmq.broker.messages.ids import RandomIds
from halfmq.broker.store.damaged_records import DamagedRecordError
from halfmq.broker.store.message_store import MessageStore, PutItem
from halfmq.broker.store.record import FLAG_BODY_BINARY, StoredMessage, stored_size
from halfmq.broker.store.topics import CHECK_MAX_TIME_TOPIC, HALF_TOPIC, OP_HALF_TOPIC, SYSTEM_GROUP
from halfmq.broker.timers.routing import route_all
from halfmq.errors import DamagedRecord, MessageTooLarge
from halfmq.wire import TransactionState

from . import record_names as names
from .check_policy import CheckPolicy, first_check_at, next_check_at, parse_immunity
from .half_log import final_of, parts_from, scan, tx_from_op
from .half_records import EndOutcome, FinalMessage, Tx, TxStats, not_found, part_label, part_of, tags_of
from .record_names import OpKind
from .state_machine import HalfEvent, TxAction, op_kind, state_after_op, transition

log = logging.getLogger(__name__)

MAX_CACHED_HALVES = 16_384  # pending halves kept in memory for their end; older ones are read back from the log

Durable = Callable[[int], Awaitable[None]]


class HalfMessageService:
    def __init__(
        self,
        store: MessageStore,
        policy: CheckPolicy,
        durable: Durable,
        *,
        retention: float = 900.0,
        max_resolved: int = 1_000_000,
        clock: Callable[[], float] = time.time,
        on_finish: Callable[[float], None] = lambda seconds: None,
    ) -> None:
        self.store = store
        self.policy = policy
        self._durable = durable
        self._retention = retention
        self._max_resolved = max_resolved
        self._clock = clock
        self._on_finish = on_finish
        self._txs: dict[str, Tx] = {}
        self._pending: dict[str, Tx] = {}  # insertion order == half offset order
        self._halves: dict[str, tuple[StoredMessage, ...]] = {}  # pending halves sent since start: an end needs no log read
        self._ids = RandomIds(upper=False)  # unpredictable: an id handed out names no other
        self._resolved: deque[str] = deque()
        self._due: list[tuple[float, int, str]] = []
        self._seq = itertools.count()
        self.stats = TxStats()
        for topic in (HALF_TOPIC, OP_HALF_TOPIC, CHECK_MAX_TIME_TOPIC):
            store.create_topic(topic, 1)
        self._rebuild()

    # --- queries ----------------------------------------------------------------
    def get(self, transaction_id: str) -> Tx:
        tx = self._txs.get(transaction_id)
        if tx is None:
            raise not_found(transaction_id)
        return tx

    def pending(self) -> list[Tx]:
        return list(self._pending.values())

    def pending_on(self, topic: str) -> int:
        """How many pending transactions have a half (the first or a companion) for ``topic``: a topic's deletion is
        refused while any has. Reads each pending half's properties (an operator's verb, not a hot path)."""
        return sum(1 for tx in list(self._pending.values())
                   if any(h.properties.get(names.REAL_TOPIC) == topic for h in self._parts_or_none(tx)))

    def _parts_or_none(self, tx: Tx) -> tuple[StoredMessage, ...]:
        try:
            return self.half_parts(tx)
        except DamagedRecord:
            return ()

    def in_state(self, state: TransactionState) -> list[Tx]:
        return [tx for tx in self._txs.values() if tx.state is state]

    def now(self) -> float:
        return self._clock()

    @property
    def pending_count(self) -> int:
        return len(self._pending)

    def lowest_needed_offset(self) -> int | None:
        """Retention's pin (store.retention): the oldest open transaction's half, which a check-back may still commit
        (pending transactions are kept in half order, so it is the first). None when no transaction is open."""
        head = next(iter(self._pending.values()), None)
        return head.half_clog_offset if head is not None else None

    def half_message(self, tx: Tx) -> StoredMessage:
        """The transaction's (first) half message: what a check-back and a view show."""
        halves = self._halves.get(tx.transaction_id)
        if halves is not None:
            return halves[0]
        try:
            return self.store.reads.read_at(tx.half_clog_offset)
        except DamagedRecordError as exc:
            raise DamagedRecord(f"the half message of transaction {tx.transaction_id} is damaged on disk: {exc}") from None

    def half_parts(self, tx: Tx) -> tuple[StoredMessage, ...]:
        """Every half message the transaction decides: the first, then its companions (``also``) in send order."""
        halves = self._halves.get(tx.transaction_id)
        if halves is not None:
            return halves
        try:
            return parts_from(self.store, self.half_message(tx))
        except DamagedRecordError as exc:
            raise DamagedRecord(f"a half message of transaction {tx.transaction_id} is damaged on disk: {exc}") from None

    def _readable_half(self, tx: Tx) -> StoredMessage | None:
        """The half message, or None when it is damaged: a rollback needs only the transaction id, so it can still end it."""
        try:
            return self.half_message(tx)
        except DamagedRecord:
            return None

    # --- half -------------------------------------------------------------------
    def prepare_half(self, producer_group: str, item: PutItem, real_queues: int, *, transaction_id: str | None = None,
                     part: str | None = None) -> tuple[PutItem, str]:
        """Rewrite a validated message for the half topic; return it and its transaction id (a new one unless given).

        ``part``: its HALF_PART ("i/n") when one local transaction decides several messages.
        """
        transaction_id = transaction_id or self._ids()
        props = dict(item.properties)
        props.pop(names.HALF_PART, None)
        if part is not None:
            props[names.HALF_PART] = part
        for name in names.DELAY_PROPERTIES:
            props.pop(name, None)  # RocketMQ 4's delay levels are ignored for transactional messages
        props.update({
            names.REAL_TOPIC: item.topic,
            names.REAL_QID: str(item.queue_id),
            names.TRAN_MSG: "true",
            names.PRODUCER_GROUP: producer_group,
            names.TRANSACTION_ID: transaction_id,
        })
        half = PutItem(HALF_TOPIC, 0, item.body, props, item.born_timestamp, item.binary, item.tag)
        return half, transaction_id

    def prepare_halves(self, producer_group: str, items: Sequence[PutItem]) -> list[PutItem]:
        """``prepare_half`` for the messages one local transaction decides: one transaction id, HALF_PART i/n on each
        (none on a lone half, written as before)."""
        first, transaction_id = self.prepare_half(producer_group, items[0], 0, part=part_label(1, len(items)) if len(items) > 1 else None)
        return [first, *(self.prepare_half(producer_group, item, 0, transaction_id=transaction_id, part=part_label(i, len(items)))[0]
                         for i, item in enumerate(items[1:], start=2))]

    def send_half(self, producer_group: str, item: PutItem, real_queues: int,
                  then: Callable[[list[PutItem]], PutItem] | None = None, *, also: Sequence[PutItem] = ()) -> tuple[Tx, int]:
        """Store a half message, and its companions ``also`` (the same transaction), as one write group.

        ``then`` adds a last record to the group (an idempotent producer's number). The transaction is the first
        half's: its id, msg_id, offsets and check-backs; a commit writes every half's final, a rollback none.
        """
        halves = self.prepare_halves(producer_group, [item, *also])
        half = halves[0]
        transaction_id = half.properties[names.TRANSACTION_ID]
        commit_group = [*halves, PutItem(OP_HALF_TOPIC, 0, b"0" * 20, {"PAD": "x" * 400})]
        if not self.store.fits(commit_group):  # its commit (final messages + op) must fit one segment too
            raise MessageTooLarge("the message is too large for an atomic commit in one commit-log segment")
        op_max = self.store.reads.queue_range(OP_HALF_TOPIC, 0)[1]
        results, end = self.store.put(halves if then is None else [*halves, then(halves)])
        result = results[0]
        now_ms = int(self._clock() * 1000)
        tx = Tx(transaction_id, producer_group, TransactionState.PENDING, result.commit_log_offset, result.queue_offset,
                now_ms, half.properties[names.UNIQ_KEY], op_max, end_offset=end)
        self._txs[transaction_id] = tx
        if len(self._halves) < MAX_CACHED_HALVES:
            self._halves[transaction_id] = tuple(
                StoredMessage(HALF_TOPIC, 0, r.queue_offset, r.commit_log_offset, h.born_timestamp or r.store_timestamp,
                              r.store_timestamp, h.properties, h.body, FLAG_BODY_BINARY if h.binary else 0, r.size)
                for h, r in zip(halves, results, strict=False))
        self.reschedule(tx, first_check_at(now_ms / 1000, self.policy, parse_immunity(half.properties.get(names.CHECK_IMMUNITY))))
        self._pending[transaction_id] = tx
        return tx, end

    # --- end --------------------------------------------------------------------
    async def end(self, transaction_id: str, producer_group: str | None, state: str, *, from_check: bool = False) -> EndOutcome:
        """Apply commit / rollback / unknown; ``producer_group=None`` is an operator acting."""
        outcome = self.end_unflushed(transaction_id, producer_group, state, from_check=from_check)
        await self._durable(outcome.tx.end_offset)
        return outcome

    def end_unflushed(self, transaction_id: str, producer_group: str | None, state: str, *, from_check: bool = False) -> EndOutcome:
        """``end`` without its fsync wait: a batch of ends waits once, for ``max(outcome.tx.end_offset)``."""
        tx = self.get(transaction_id)
        if producer_group is not None and tx.producer_group != producer_group:
            # Answered as no transaction at all: "another group's" would tell any group which ids exist.
            raise not_found(transaction_id)
        return self.apply(tx, HalfEvent(state), note="check" if from_check else "producer")

    def apply(self, tx: Tx, event: HalfEvent, note: str = "") -> EndOutcome:
        """Run one event through the state machine and write what it says (synchronously: no interleaving)."""
        new_state, action = transition(tx.state, event)
        if action is TxAction.NONE:
            if event is HalfEvent.UNKNOWN and tx.state is TransactionState.PENDING:
                log.info("transaction %s: producer answered unknown (%s)", tx.transaction_id, note)
            return EndOutcome(tx, duplicate=tx.state is not TransactionState.PENDING)
        parts: tuple[StoredMessage, ...] = () if action is TxAction.APPEND_OP else self.half_parts(tx)
        half = self._readable_half(tx) if action is TxAction.APPEND_OP else parts[0]
        op = self._op(tx, op_kind(event), half)
        if action is TxAction.APPEND_FINAL_AND_OP:
            # Every half's final, each routed on its own (a delay starts at the commit), and the op: one write group.
            finals = route_all(self.store, [self._final(part) for part in parts], int(self._clock() * 1000), None)
            op.properties[names.FINAL_SIZE] = str(sum(stored_size(f.topic, f.properties, f.body) for f in finals))
            items = [*finals, op]
            if event is HalfEvent.RESEND:
                items.append(PutItem(CHECK_MAX_TIME_TOPIC, 0, b"", {names.TRANSACTION_ID: tx.transaction_id, names.RESENT: "true"}))
            results, end = self.store.put(items)
            tx.final = FinalMessage.of(tx.msg_id, results[0])
            self.stats.commits += 1
        elif action is TxAction.APPEND_OP:
            _, end = self.store.put([op])
            self.stats.rollbacks += 1
        else:  # MOVE_TO_CHECK_MAX: a copy of every half, so a resend after a restart finds them all, one after another
            copies = [PutItem(CHECK_MAX_TIME_TOPIC, 0, part.body, dict(part.properties), part.born_timestamp, part.binary,
                              part.properties.get(names.TAGS)) for part in parts]
            _, end = self.store.put([*copies, op])
            self.stats.discards += 1
            log.warning("transaction %s discarded after %d checks", tx.transaction_id, tx.check_times)
        previous = tx.state
        tx.state = new_state
        tx.end_offset = end
        tx.resolved_ms = int(self._clock() * 1000)
        if previous is TransactionState.PENDING:
            self._on_finish(max(0.0, (tx.resolved_ms - tx.born_ms) / 1000))
            self._resolve(tx)
        else:
            self._resolved.append(tx.transaction_id)
        return EndOutcome(tx, duplicate=False, half=half)

    def record_check(self, tx: Tx, answer: str) -> None:
        """Count a check that reached a producer, durably, and schedule the next one.

        The op record is written first: a disk that refuses it (StoreNotWritable) leaves the count as it was.
        """
        op = self._op(tx, OpKind.CHECK, None)
        op.properties.update({names.CHECK_TIMES: str(tx.check_times + 1), names.LAST_ANSWER: answer})
        self.store.put([op])
        tx.check_times += 1
        tx.last_answer = answer
        tx.last_check_ms = int(self._clock() * 1000)
        self.reschedule(tx, next_check_at(self._clock(), self.policy))
        self.stats.checks[answer] = self.stats.checks.get(answer, 0) + 1

    def reschedule(self, tx: Tx, due_at: float) -> None:
        tx.due_at = due_at
        heapq.heappush(self._due, (due_at, next(self._seq), tx.transaction_id))

    def due(self, now: float) -> list[Tx]:
        """Pending transactions whose check time has come (only due entries are touched)."""
        out = []
        while self._due and self._due[0][0] <= now:
            due_at, _, txid = heapq.heappop(self._due)
            tx = self._pending.get(txid)
            if tx is not None and tx.due_at == due_at:
                out.append(tx)
        return out

    # --- bookkeeping ------------------------------------------------------------
    def _op(self, tx: Tx, kind: OpKind, half: StoredMessage | None) -> PutItem:
        props = {names.TRANSACTION_ID: tx.transaction_id, names.OP: kind.value, names.PRODUCER_GROUP: tx.producer_group,
                 names.HALF_CLOG: str(tx.half_clog_offset), names.BORN_MS: str(tx.born_ms)}
        return PutItem(OP_HALF_TOPIC, 0, str(tx.half_offset).encode(), props, tag=tags_of(half))

    def _final(self, half: StoredMessage) -> PutItem:
        props = {k: v for k, v in half.properties.items() if k not in names.HIDDEN_ON_FINAL}
        return PutItem(half.properties[names.REAL_TOPIC], int(half.properties[names.REAL_QID]), half.body, props,
                       half.born_timestamp, half.binary, half.properties.get(names.TAGS))

    def _resolve(self, tx: Tx) -> None:
        first = next(iter(self._pending), None)
        self._pending.pop(tx.transaction_id, None)
        self._halves.pop(tx.transaction_id, None)
        self._resolved.append(tx.transaction_id)
        if first == tx.transaction_id:
            self._advance_checkpoint()
        self._evict()

    def _advance_checkpoint(self) -> None:
        head = next(iter(self._pending.values()), None)
        if head is None:
            half = self.store.reads.queue_range(HALF_TOPIC, 0)[1]
            op = self.store.reads.queue_range(OP_HALF_TOPIC, 0)[1]
        else:
            half, op = head.half_offset, head.op_offset_at_creation
        self.store.offsets.commit(SYSTEM_GROUP, HALF_TOPIC, 0, half)
        self.store.offsets.commit(SYSTEM_GROUP, OP_HALF_TOPIC, 0, op)

    def _evict(self) -> None:
        horizon = int((self._clock() - self._retention) * 1000)
        while self._resolved:
            tx = self._txs.get(self._resolved[0])
            if tx is not None and tx.state is not TransactionState.DISCARDED and len(self._resolved) <= self._max_resolved and (tx.resolved_ms or 0) >= horizon:
                break
            txid = self._resolved.popleft()
            if tx is not None and tx.state is not TransactionState.DISCARDED:
                self._txs.pop(txid, None)

    # --- restart ----------------------------------------------------------------
    def _rebuild(self) -> None:
        started = time.monotonic()
        half_from = self.store.offsets.get(SYSTEM_GROUP, HALF_TOPIC, 0) or 0
        op_from = self.store.offsets.get(SYSTEM_GROUP, OP_HALF_TOPIC, 0) or 0
        retained_from = self.store.reads.offset_for_time(OP_HALF_TOPIC, 0, int((self._clock() - self._retention) * 1000))
        for half in scan(self.store, HALF_TOPIC, half_from):
            txid = half.properties.get(names.TRANSACTION_ID)
            if not txid or part_of(half.properties)[0] > 1:  # a companion: its transaction is its first half's
                continue
            tx = Tx(txid, half.properties.get(names.PRODUCER_GROUP, ""), TransactionState.PENDING, half.commit_log_offset,
                    half.queue_offset, half.store_timestamp, half.properties.get(names.UNIQ_KEY, ""), op_from)
            self._txs[txid] = tx
            self._pending[txid] = tx
        for op in scan(self.store, OP_HALF_TOPIC, min(op_from, retained_from)):
            self._replay_op(op)
        self._replay_markers()

        for tx in self._pending.values():
            half = self.half_message(tx)
            first = first_check_at(tx.born_ms / 1000, self.policy, parse_immunity(half.properties.get(names.CHECK_IMMUNITY)))
            self.reschedule(tx, max(first, next_check_at(tx.last_check_ms / 1000, self.policy) if tx.last_check_ms else first))
        self._advance_checkpoint()
        if self._txs:
            log.info("transaction index rebuilt in %.3fs: %d pending, %d remembered", time.monotonic() - started, len(self._pending), len(self._txs))

    def _replay_markers(self) -> None:
        """Discarded transactions (their half's copy) and resent ones (a RESENT marker) from CHECK_MAX_TIME_TOPIC."""
        for marker in scan(self.store, CHECK_MAX_TIME_TOPIC, 0):
            txid = marker.properties.get(names.TRANSACTION_ID, "")
            if part_of(marker.properties)[0] > 1:  # the copy of a companion: the first half's copy stands for it
                continue
            marked = self._txs.get(txid)
            if marker.properties.get(names.RESENT) == "true":
                if marked is not None and marked.state is TransactionState.DISCARDED:
                    marked.state = TransactionState.COMMITTED
            elif marked is None:
                self._txs[txid] = tx_from_op(self.store, marker, TransactionState.DISCARDED)

    def _replay_op(self, op: StoredMessage) -> None:
        props = op.properties
        txid, kind = props.get(names.TRANSACTION_ID, ""), props.get(names.OP, "")
        tx = self._txs.get(txid)
        if kind == OpKind.CHECK:
            if tx is not None and tx.state is TransactionState.PENDING:
                tx.check_times = int(props.get(names.CHECK_TIMES, tx.check_times + 1))
                tx.last_answer = props.get(names.LAST_ANSWER)
                tx.last_check_ms = op.store_timestamp
            return
        state = state_after_op(kind)
        if state is None:
            return
        was_resolved = tx is not None and tx.state is not TransactionState.PENDING
        if tx is None:
            tx = tx_from_op(self.store, op, state)
            self._txs[txid] = tx
        tx.state = state
        tx.end_offset = op.commit_log_offset + op.size
        tx.resolved_ms = op.store_timestamp
        final = final_of(self.store, op)
        if final is not None:
            tx.final = FinalMessage.of(tx.msg_id, final)
        self._pending.pop(txid, None)
        if not was_resolved:
            self._resolved.append(txid)
