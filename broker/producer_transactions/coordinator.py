"""Producer transactions with Kafka semantics (DESIGN section 11): transactional ids, epochs, one atomic commit.

Kafka's TransactionCoordinator. Durable state is a record stream in the system topic HALFMQ_TXN_STATE
(queue 0): ``init`` (a new producer id or epoch), ``begin``, ``commit`` and ``abort``. The messages and
acks of an open transaction are kept in memory: an open transaction never survives a restart (recovery
aborts it, as the design says), so writing them before the commit would only write them twice.

A commit is ONE atomic write group on the commit log, the primitive a half message's commit uses for its
final message and op record: every message of the transaction in its real topic and queue, then the
commit record carrying the acks. The store keeps a group whole or drops it whole, so after a kill -9
either all of it is visible (and its acks are re-applied from the commit record on start) or none of it
is and the transaction is aborted.

Each step checks, in this order and before anything changes: the transactional id is known, the producer
id and epoch are current (an older epoch is PRODUCER_FENCED), the request is not a retry of the last one
(which gets the stored answer), the state machine allows the event, and the sequence number is the next one.

A transactional id's producer id comes from the idempotent producer's ids (``idempotence.ProducerIds``,
``self.ids``): random, bound to the principal whose ``init`` obtained it, and bound there on every init so
its numbered sends go through the same door as any other. Restart: ``replay.py``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

from msgspec.structs import replace

from halfmq.broker.delivery.receipt_handle import ReceiptHandle
from halfmq.broker.idempotence.principal_caps import PrincipalCaps
from halfmq.broker.idempotence.producer_ids import ProducerIds
from halfmq.broker.idempotence.producer_records import ABORTED_BY, MESSAGES, OFFSETS, TxnRecord
from halfmq.broker.idempotence.producer_state import current, not_owned, state_record
from halfmq.broker.idempotence.send_window import DEFAULT_SIZE
from halfmq.broker.messages.names import NameKind, checked_name
from halfmq.broker.store.message_store import MessageStore, PutItem
from halfmq.broker.store.record import stored_size
from halfmq.broker.store.topics import TXN_STATE_TOPIC, TopicConfig
from halfmq.broker.timers.routing import route_all, visible_place
from halfmq.errors import OutOfOrderSequence, ReceiptInOtherTransaction, TransactionTooLarge, UnknownTransactionalId

from .held_bytes import HeldBytes
from .producer_state_machine import ProducerTxnEvent, ProducerTxnState, TxnAction, transition
from .producer_timeout import checked_timeout, deadline_ms, expired, id_expired, idle_since_ms
from .producer_txn import AckLedger, ProducerRegistrations, ProducerTxn, TxnLimits
from .replay import ReplayReport, replay
from .results import (
    AcksResult,
    AddedMessage,
    BeginResult,
    CommittedMessage,
    EndResult,
    InitResult,
    MessagesResult,
    OpenTxn,
    StepResult,
    TxnView,
)
from .txn_records import AbortedBy, AckRef, encode_acks

log = logging.getLogger(__name__)

Durable = Callable[[int], Awaitable[None]]
__all__ = ["AckLedger", "ProducerTxn", "TransactionCoordinator", "TxnLimits"]
DEFAULT_LIMITS = TxnLimits()


class TransactionCoordinator:
    def __init__(self, store: MessageStore, acks: AckLedger, durable: Durable, *, limits: TxnLimits = DEFAULT_LIMITS,
                 clock: Callable[[], float] = time.time, send_window: int = DEFAULT_SIZE,
                 producer_id_expiry_ms: int = 24 * 3600 * 1000, producers: ProducerRegistrations | None = None,
                 producer_caps: PrincipalCaps | None = None, transactional_id_expiry_ms: int = 7 * 24 * 3600 * 1000) -> None:
        self.store = store
        self.producers = producers  # the replay hands it the producers' registrations read back from the log
        self.ids = ProducerIds(store, durable, clock=clock, send_window=send_window, producer_id_expiry_ms=producer_id_expiry_ms,
                               caps=producer_caps)
        self._held_acks = acks.held_acks
        self._acks = acks
        self._durable = durable
        self.limits = limits
        self.held = HeldBytes(limits.max_open_bytes, limits.max_open_bytes_per_principal)
        self._clock = clock
        self._txns: dict[str, ProducerTxn] = {}
        self._held_by: dict[tuple[str, str, int, int], str] = {}
        self.commits = 0
        self.aborts = 0
        self.transactional_id_expiry_ms = transactional_id_expiry_ms
        store.create_topic(TXN_STATE_TOPIC, 1)
        self.replayed: ReplayReport = replay(self, self._txns, acks)

    # --- queries ----------------------------------------------------------------
    def all(self) -> list[ProducerTxn]:
        return [self._txns[tid] for tid in sorted(self._txns)]

    def get(self, tid: str) -> ProducerTxn:
        txn = self._txns.get(tid)
        if txn is None:
            raise UnknownTransactionalId(f"no producer has initialised transactional id {tid!r}")
        return txn

    @property
    def open_count(self) -> int:
        return sum(1 for t in self._txns.values() if t.state is ProducerTxnState.ONGOING)

    def now_ms(self) -> int:
        return int(self._clock() * 1000)

    def view(self, txn: ProducerTxn) -> TxnView:
        """What an operator sees of one id (GET /v1/transactional-ids, the console)."""
        open_txn = None
        if txn.state is ProducerTxnState.ONGOING:
            open_txn = OpenTxn(txn.number, round((self.now_ms() - txn.begun_ms) / 1000, 3), deadline_ms(txn.begun_ms, txn.timeout_ms),
                               len(txn.items), len(txn.acks))
        return TxnView(txn.transactional_id, txn.producer_id, txn.epoch, txn.state, txn.timeout_ms, txn.number, open_txn, txn.aborted_by)

    # --- requests ---------------------------------------------------------------
    async def init(self, tid: str, timeout_ms: int | None, owner: str) -> InitResult:
        """A new producer instance of ``owner``: bump the epoch durably, abort what the previous one left open, answer.

        A new id's name is checked here, where every front creates one; an id already on disk (an older broker
        took any name) keeps working.
        """
        timeout = checked_timeout(timeout_ms)
        old = self._txns.get(tid)
        if old is None:
            checked_name(NameKind.TRANSACTIONAL_ID, tid)
            txn = ProducerTxn(transactional_id=tid, producer_id=self.ids.fresh_id(), epoch=0, timeout_ms=timeout, owner=owner,
                              sends=self.ids.window(), last_used_ms=self.now_ms())
            _, end = self.store.put([self._record(txn, TxnRecord.INIT)])
        else:
            move = transition(old.state, ProducerTxnEvent.INIT)
            txn = ProducerTxn(transactional_id=tid, producer_id=old.producer_id, epoch=old.epoch + 1, timeout_ms=timeout, owner=owner,
                              number=old.number, sends=self.ids.window(), last_used_ms=self.now_ms())
            items = [self._record(txn, TxnRecord.INIT)]
            if move.action is TxnAction.ABORT_THEN_INIT:
                items.insert(0, self.abort_record(old, AbortedBy.NEW_EPOCH))
            _, end = self.store.put(items)
            if move.action is TxnAction.ABORT_THEN_INIT:
                self.aborted(old, AbortedBy.NEW_EPOCH)
        self._txns[tid] = txn
        self.ids.bind(txn)
        await self._durable(end)
        return InitResult(tid, txn.producer_id, txn.epoch, txn.timeout_ms)

    def begin(self, tid: str, producer_id: int, epoch: int, sequence: int) -> BeginResult:
        return self._begin(tid, producer_id, epoch, sequence)[0]

    async def begin_durably(self, tid: str, producer_id: int, epoch: int, sequence: int) -> BeginResult:
        """``begin``, answered once its record is durable (on a set: on a majority). A Kafka client begins a transaction
        implicitly, with its first AddPartitionsToTxn or AddOffsetsToTxn: a set's new leader that never got the begin
        would take the client's next such call for a new transaction's first and commit its offsets without the records
        the old leader held. Kafka's coordinator, too, writes a transaction's Ongoing state, replicated, before it answers."""
        answer, end = self._begin(tid, producer_id, epoch, sequence)
        await self._durable(end)
        return answer

    def _begin(self, tid: str, producer_id: int, epoch: int, sequence: int) -> tuple[BeginResult, int]:
        """The begin's answer, and the log end its record is durable at (a repeated begin's: the log's end now)."""
        txn, repeat = self._step(tid, producer_id, epoch, ProducerTxnEvent.BEGIN, sequence)
        if repeat is not None:
            return repeat, self.store.commit_log.end_offset  # type: ignore[return-value]  # the last request was a begin
        number = txn.number + 1
        (begun,), end = self.store.put([self._record(txn, TxnRecord.BEGIN, number=number)])
        txn.begun_at = begun.commit_log_offset
        txn.state, txn.number, txn.begun_ms, txn.ended_ms, txn.aborted_by = ProducerTxnState.ONGOING, number, self.now_ms(), None, None
        txn.items, txn.size, txn.acks, txn.message_count, txn.ack_count, txn.end_answer = [], 0, [], 0, 0, None
        txn.offsets = {}
        answer = BeginResult(tid, producer_id, epoch, number, txn.state, sequence)
        self._remember(txn, ProducerTxnEvent.BEGIN, sequence, answer)
        # Not waited for on disk here (``begin_durably`` waits): an open transaction is aborted by recovery whatever
        # happens, and a begin record lost to a power cut only makes an HTTP producer's next request, which carries its
        # number, INVALID_TXN_STATE instead of TRANSACTION_ABORTED. The commit's fsync covers it. (One fsync per
        # transaction, not two: `halfmq bench eos`.)
        return answer, end

    def add_messages(self, tid: str, producer_id: int, epoch: int, sequence: int, items: list[PutItem],
                     missing_topics: list[TopicConfig], *, principal: str | None = None) -> MessagesResult:
        """Keep validated messages for the commit; create the topics they need once everything is accepted."""
        txn, repeat = self._step(tid, producer_id, epoch, ProducerTxnEvent.ADD_MESSAGES, sequence)
        if repeat is not None:
            return repeat  # type: ignore[return-value]
        # Each message as its record takes it, in bytes (prepare checked its text is UTF-8); the commit checks the fit to a segment.
        size = sum(stored_size(i.topic, i.properties, i.body) for i in items)
        count = len(txn.items) + len(items)
        if count > self.limits.max_messages or txn.size + size > self.limits.max_bytes:
            raise TransactionTooLarge(
                f"the transaction would hold {count} messages of {txn.size + size} bytes; at most "
                f"{self.limits.max_messages} messages and {self.limits.max_bytes} bytes commit as one",
                max_messages=self.limits.max_messages, max_bytes=self.limits.max_bytes)
        self.held.hold(tid, principal, size)  # the broker's and the principal's caps: refused before anything is kept
        for cfg in missing_topics:
            self.store.create_topic(cfg.name, cfg.queues)
        txn.items.extend(items)
        txn.size += size
        txn.message_count = len(txn.items)
        answer = MessagesResult(tid, sequence, len(txn.items),
                                tuple(AddedMessage(i.properties.get("UNIQ_KEY", ""), i.topic, i.queue_id) for i in items))
        self._remember(txn, ProducerTxnEvent.ADD_MESSAGES, sequence, answer)
        return answer

    def add_acks(self, tid: str, producer_id: int, epoch: int, sequence: int, receipts: list[ReceiptHandle],
                 offsets: list[AckRef] | None = None) -> AcksResult:
        """Hold consumed deliveries in the transaction: invisible to their group until it ends. ``offsets``: consumed
        offsets committed in it instead (group, topic, queue, the group's next offset: Kafka's TxnOffsetCommit), kept
        until the commit writes them on its record and moves the groups' offsets; an abort forgets them. A later
        offset for the same group and queue replaces the earlier one, as in Kafka."""
        txn, repeat = self._step(tid, producer_id, epoch, ProducerTxnEvent.ADD_ACKS, sequence)
        if repeat is not None:
            return repeat  # type: ignore[return-value]
        moved = {**txn.offsets, **{(g, t, q): o for g, t, q, o in offsets or []}}
        mine = {_key(h) for h in txn.acks}
        fresh = []
        for h in receipts:
            key = _key(h)
            owner = self._held_by.get(key)
            if owner is not None and owner != tid:
                raise ReceiptInOtherTransaction(f"{h.group}/{h.topic}/{h.queue_id}@{h.offset} is acked in another open transaction")
            if key not in mine:
                mine.add(key)
                fresh.append(h)
        self._held_acks.check_held(fresh)
        if len(txn.acks) + len(fresh) + len(moved) > self.limits.max_acks:
            raise TransactionTooLarge(f"a transaction holds at most {self.limits.max_acks} acks and consumed offsets",
                                      max_acks=self.limits.max_acks)
        self._held_acks.hold(fresh)
        for h in fresh:
            self._held_by[_key(h)] = tid
        txn.acks.extend(fresh)
        txn.offsets = moved
        txn.ack_count = len(txn.acks) + len(txn.offsets)
        answer = AcksResult(tid, sequence, txn.ack_count)
        self._remember(txn, ProducerTxnEvent.ADD_ACKS, sequence, answer)
        return answer

    async def commit(self, tid: str, producer_id: int, epoch: int) -> EndResult:
        """ONE write group: every message, then the commit record with the acks and the consumed offsets (applied
        once it is written); a repeat gets the first answer."""
        txn = self._current(tid, producer_id, epoch)
        move = transition(txn.state, ProducerTxnEvent.COMMIT)
        if move.action is TxnAction.NONE:
            assert txn.end_answer is not None
            return replace(txn.end_answer, duplicate=True)
        acks: list[AckRef] = [(h.group, h.topic, h.queue_id, h.offset) for h in txn.acks]
        marker = self._record(txn, TxnRecord.COMMIT, body=encode_acks(acks))
        marker.properties[MESSAGES] = str(len(txn.items))
        moves: list[AckRef] = [(g, t, q, o) for (g, t, q), o in txn.offsets.items() if self.store.topic(t) is not None]  # not of a deleted topic
        if moves:
            marker.properties[OFFSETS] = encode_acks(moves).decode()
        now_ms = self.now_ms()  # a delayed message's delay starts at the commit, not at its add
        group = [*route_all(self.store, txn.items, now_ms, None), marker]
        if not self.store.fits(group):
            raise TransactionTooLarge("the transaction does not fit one commit-log segment; commit smaller transactions")
        results, end = self.store.put(group)
        self._held_acks.settle_held(txn.acks)
        for g, t, q, o in moves:
            self._acks.restore_reset(g, t, q, o)
        self._release_keys(txn)
        self.held.release(tid)
        txn.state, txn.ended_ms = move.state, self.now_ms()
        txn.end_answer = self.end_answer(txn, tuple(
            CommittedMessage(r.properties.get("UNIQ_KEY", ""), *visible_place(r.topic, r.queue_id, r.queue_offset, r.properties)[:3],
                             r.commit_log_offset)
            for r in results[:-1]))
        txn.items, txn.acks, txn.offsets = [], [], {}
        txn.last_event = txn.last_answer = None  # numbers count within one transaction: a begin after this is new
        self.commits += 1
        await self._durable(end)
        return txn.end_answer

    async def abort(self, tid: str, producer_id: int | None, epoch: int | None, by: AbortedBy = AbortedBy.PRODUCER) -> EndResult:
        """The producer's abort (or an operator's, ``producer_id=None``): nothing becomes visible, acked receipts come back."""
        txn = self._current(tid, producer_id, epoch) if producer_id is not None and epoch is not None else self.get(tid)
        event = ProducerTxnEvent.ABORT if by is AbortedBy.PRODUCER else ProducerTxnEvent.EXPIRE
        move = transition(txn.state, event)
        if move.action is TxnAction.NONE:
            answer = txn.end_answer or self.end_answer(txn, ())
            return replace(answer, duplicate=True)
        _, end = self.store.put([self.abort_record(txn, by)])
        self.aborted(txn, by)
        await self._durable(end)
        assert txn.end_answer is not None
        return txn.end_answer

    def lowest_needed_offset(self) -> int | None:
        """Retention's pin (store.retention): the begin record of the oldest open transaction (a restart reads it to
        abort the transaction); None when none is open."""
        return min((txn.begun_at for txn in list(self._txns.values())
                    if txn.state is ProducerTxnState.ONGOING and txn.begun_at is not None), default=None)

    def abort_expired(self) -> list[str]:
        """Abort every open transaction past its timeout (the decision is ``producer_timeout.expired``)."""
        now = self.now_ms()
        due = expired({t.transactional_id: (t.begun_ms, t.timeout_ms) for t in self._txns.values()
                       if t.state is ProducerTxnState.ONGOING}, now)
        for tid in due:
            txn = self._txns[tid]
            self.store.put([self.abort_record(txn, AbortedBy.TIMEOUT)])
            self.aborted(txn, AbortedBy.TIMEOUT)
            log.warning("transaction %d of %s aborted: open longer than %d ms", txn.number, tid, txn.timeout_ms)
        return due

    def expire_idle_transactional_ids(self) -> list[str]:
        """Forget for good every transactional id idle past its expiry (the decision is ``producer_timeout.id_expired``):
        it is in no later state snapshot, and an init that names it again starts at a new producer id, epoch 0."""
        now = self.now_ms()
        idle = sorted(tid for tid, t in self._txns.items()
                      if id_expired(t.state, idle_since_ms(t.last_used_ms, t.begun_ms, t.ended_ms), now, self.transactional_id_expiry_ms))
        for tid in idle:
            self.ids.unbind(self._txns.pop(tid))
        if idle:
            log.info("forgot %d transactional ids idle longer than %d ms", len(idle), self.transactional_id_expiry_ms)
        return idle

    def check_acting(self, tid: str, principal: str) -> None:
        """PRODUCER_ID_NOT_OWNED when ``tid``'s producer id was obtained by another principal (the steps of its
        transactions: begin, messages, acks, commit, abort). Its ``init`` is not checked: a new instance of any
        principal allowed on the transactional id takes it over, fencing the old one. Unknown ids are the step's to
        refuse; an id initialised before ids were bound has no owner and is left to the transactional-id policy."""
        txn = self._txns.get(tid)
        if txn is not None and txn.owner is not None and txn.owner != principal:
            not_owned(txn, principal)

    # --- checks -----------------------------------------------------------------
    def _current(self, tid: str, producer_id: int, epoch: int) -> ProducerTxn:
        txn = self.get(tid)
        current(txn, producer_id, epoch)
        return txn

    @staticmethod
    def _repeat(txn: ProducerTxn, event: ProducerTxnEvent, sequence: int) -> StepResult | None:
        """The stored answer when this is a retry of the last request (same kind, same sequence)."""
        if txn.last_event is event and txn.last_sequence == sequence and txn.last_answer is not None:
            return replace(txn.last_answer, duplicate=True)
        return None

    def _step(self, tid: str, producer_id: int, epoch: int, event: ProducerTxnEvent,
              sequence: int) -> tuple[ProducerTxn, StepResult | None]:
        """The transaction a step acts on, and the stored answer when the step is a retry of the last request (then
        nothing else is checked or done); a new step must be allowed in the transaction's state and come in sequence:
        a begin at 0, every other step right after the last."""
        txn = self._current(tid, producer_id, epoch)
        repeat = self._repeat(txn, event, sequence)
        if repeat is None:
            transition(txn.state, event)
            if event is ProducerTxnEvent.BEGIN and sequence != 0:
                raise OutOfOrderSequence(f"a transaction's begin carries sequence 0, not {sequence}", expected=0)
            if event is not ProducerTxnEvent.BEGIN and sequence != txn.last_sequence + 1:
                raise OutOfOrderSequence(f"expected sequence {txn.last_sequence + 1}, not {sequence}", expected=txn.last_sequence + 1)
        return txn, repeat

    @staticmethod
    def _remember(txn: ProducerTxn, event: ProducerTxnEvent, sequence: int, answer: StepResult) -> None:
        txn.last_event, txn.last_sequence, txn.last_answer = event, sequence, answer

    # --- bookkeeping ------------------------------------------------------------
    def aborted(self, txn: ProducerTxn, by: AbortedBy) -> None:
        """Forget an aborted transaction's messages, give its acks and held bytes back (its abort record is written)."""
        self._held_acks.release_held(txn.acks)
        self.held.release(txn.transactional_id)
        self._release_keys(txn)
        txn.state, txn.ended_ms, txn.aborted_by = ProducerTxnState.COMPLETE_ABORT, self.now_ms(), by
        txn.end_answer = self.end_answer(txn, ())
        txn.items, txn.acks, txn.offsets = [], [], {}
        txn.last_event = txn.last_answer = None
        self.aborts += 1

    def _release_keys(self, txn: ProducerTxn) -> None:
        for h in txn.acks:
            self._held_by.pop(_key(h), None)

    @staticmethod
    def end_answer(txn: ProducerTxn, results: tuple[CommittedMessage, ...]) -> EndResult:
        return EndResult(txn.transactional_id, txn.producer_id, txn.epoch, txn.number, txn.state, txn.message_count, txn.ack_count,
                         txn.aborted_by, results)

    @staticmethod
    def _record(txn: ProducerTxn, kind: TxnRecord, *, number: int | None = None, body: bytes = b"") -> PutItem:
        return state_record(txn, kind, number=number, timeout_ms=txn.timeout_ms, body=body)

    @staticmethod
    def abort_record(txn: ProducerTxn, by: AbortedBy) -> PutItem:
        return state_record(txn, TxnRecord.ABORT, extra={ABORTED_BY: by.value})


def _key(h: ReceiptHandle) -> tuple[str, str, int, int]:
    return (h.group, h.topic, h.queue_id, h.offset)
