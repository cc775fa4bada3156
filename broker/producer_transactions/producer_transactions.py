"""Producer transactions with Kafka semantics (DESIGN section 11): transactional ids, epochs, one atomic commit.

Durable state is a record stream in the system topic HALFMQ_TXN_STATE (queue 0):
``init`` (a new producer id or epoch), ``begin``, ``commit`` and ``abort``. The
messages and acks of an open transaction are kept in memory: an open
transaction never survives a restart (recovery aborts it, as the design says),
so writing them before the commit would only write them twice.

A commit is ONE atomic write group on the commit log, the primitive a half
message's commit uses for its final message and op record: every message of
the transaction in its real topic and queue, then the commit record carrying
the acks. The store keeps a group whole or drops it whole, so after a kill -9
either all of it is visible (and its acks are re-applied from the commit
record on start) or none of it is and the transaction is aborted.

Each method checks, in this order and before anything changes: the
transactional id is known, the producer id and epoch are current (an older
epoch is PRODUCER_FENCED), the request is not a retry of the last one (which
gets the stored answer), the state machine allows the event, and the sequence
number is the next one.

A producer id is random (63 bits, never guessed) and bound to the principal
that obtained it (``init`` or ``new_producer_id``; the owner is on the init
record, so the binding survives a restart). ``sender`` is the one door every
numbered send goes through, whichever route or front: another principal gets
PRODUCER_ID_NOT_OWNED, and ``sent_before`` answers a repeat from the window only
when it is the same request (``SendKey``: plain or half, the same topic and
group), else SEQUENCE_NUMBER_REUSED.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, NoReturn, Protocol

from halfmq.broker.delivery.receipt_handle import ReceiptHandle
from halfmq.broker.half_messages import record_names as names
from halfmq.broker.idempotence.send_window import DEFAULT_SIZE, SendWindow, Verdict
from halfmq.broker.names import NameKind, checked_name
from halfmq.broker.store.damaged_records import DamagedEntry
from halfmq.broker.store.message_store import MessageStore, PutItem
from halfmq.broker.store.record import HEADER_SIZE, StoredMessage, encode_properties, record_size
from halfmq.broker.store.topics import TXN_STATE_TOPIC, TopicConfig
from halfmq.errors import (
    DuplicateSequenceNumber,
    InvalidProducerEpoch,
    OutOfOrderSequence,
    ProducerFenced,
    ProducerIdNotOwned,
    ReceiptInOtherTransaction,
    SequenceNumberReused,
    TransactionTooLarge,
    UnknownProducerId,
    UnknownTransactionalId,
)

from . import producer_records as rec
from .held_bytes import HeldBytes
from .producer_records import AbortedBy, AckRef, TxnRecord
from .producer_state_machine import ProducerTxnState, TxnAction, TxnEvent, transition
from .producer_timeout import checked_timeout, deadline_ms, expired

log = logging.getLogger(__name__)

Durable = Callable[[int], Awaitable[None]]
_SEND_OP = TxnRecord.SEND.value
_RECORD_ALLOWANCE = 512  # the commit record's header and properties, on top of its acks
# What a numbered send used its number for: (send path, producer group or "", topic). A repeat must match it.
SendKey = tuple[str, str, str]


class AckLedger(Protocol):
    """What a transaction needs of consumption (DeliveryService): hold acks while open, settle or release at the end."""

    def check_held(self, receipts: list[ReceiptHandle]) -> None: ...
    def hold(self, receipts: list[ReceiptHandle]) -> None: ...
    def settle_held(self, receipts: list[ReceiptHandle]) -> None: ...
    def release_held(self, receipts: list[ReceiptHandle]) -> None: ...
    def restore_acked(self, group: str, topic: str, queue_id: int, offset: int) -> None: ...


@dataclass(frozen=True)
class TxnLimits:
    max_messages: int = 10_000
    max_bytes: int = 16 * 1024 * 1024
    max_acks: int = 10_000
    max_open_bytes: int = 256 * 1024 * 1024  # held by every open transaction together (held_bytes.py)
    max_open_bytes_per_principal: int = 64 * 1024 * 1024


@dataclass
class ProducerTxn:
    """One transactional id: its producer, epoch, and its current (or last) transaction."""

    transactional_id: str
    producer_id: int
    epoch: int
    timeout_ms: int
    owner: str | None = None  # the principal that obtained the producer id; None: obtained before ids were bound
    state: ProducerTxnState = ProducerTxnState.EMPTY
    number: int = 0  # transactions begun under this id, ever
    begun_ms: int = 0
    ended_ms: int | None = None
    aborted_by: AbortedBy | None = None
    items: list[PutItem] = field(default_factory=list)
    size: int = 0
    acks: list[ReceiptHandle] = field(default_factory=list)
    ack_count: int = 0
    message_count: int = 0
    last_sequence: int = -1
    last_event: TxnEvent | None = None
    last_answer: dict[str, Any] | None = None
    end_answer: dict[str, Any] | None = None
    # Idempotent sends under this producer id and epoch (outside transactions): the window of stored numbers. An
    # answer is (SendKey, what the send answered: a list of results, or a half's), or after a restart a StoredRef.
    sends: SendWindow = field(default_factory=SendWindow)
    last_used_ms: int = 0  # a producer id without a transactional id expires after this much idleness


@dataclass(frozen=True)
class StoredRef:
    """Where a numbered send's answer is after a restart: its sequence record's offset, the message sizes, the path."""

    record_offset: int
    sizes: list[int]
    path: str


class ProducerTransactions:
    def __init__(self, store: MessageStore, acks: AckLedger, durable: Durable, *, limits: TxnLimits = TxnLimits(),
                 clock: Callable[[], float] = time.time, send_window: int = DEFAULT_SIZE,
                 producer_id_expiry_ms: int = 24 * 3600 * 1000) -> None:
        self.store = store
        self.send_window = send_window
        self.producer_id_expiry_ms = producer_id_expiry_ms
        self._idempotent: dict[int, ProducerTxn] = {}  # producer ids without a transactional id (POST /v1/producer-ids)
        self._acks = acks
        self._durable = durable
        self.limits = limits
        self.held = HeldBytes(limits.max_open_bytes, limits.max_open_bytes_per_principal)
        self._clock = clock
        self._txns: dict[str, ProducerTxn] = {}
        self._held_by: dict[tuple[str, str, int, int], str] = {}
        self._tid_of: dict[int, str] = {}  # producer id -> transactional id
        self.commits = 0
        self.aborts = 0
        store.create_topic(TXN_STATE_TOPIC, 1)
        self._replay()

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

    def view(self, txn: ProducerTxn) -> dict[str, Any]:
        """What GET /v1/transactional-ids shows of one id."""
        open_txn = None
        if txn.state is ProducerTxnState.ONGOING:
            open_txn = {"transaction": txn.number, "age_seconds": round((self.now_ms() - txn.begun_ms) / 1000, 3),
                        "deadline_timestamp": deadline_ms(txn.begun_ms, txn.timeout_ms),
                        "messages": len(txn.items), "acks": len(txn.acks)}
        return {"transactional_id": txn.transactional_id, "producer_id": txn.producer_id, "epoch": txn.epoch,
                "state": txn.state.value, "transaction_timeout_ms": txn.timeout_ms, "transaction": txn.number,
                "open": open_txn, "aborted_by": txn.aborted_by.value if txn.aborted_by else None}

    # --- requests ---------------------------------------------------------------
    async def init(self, tid: str, timeout_ms: int | None, owner: str) -> dict[str, Any]:
        """A new producer instance of ``owner``: bump the epoch durably, abort what the previous one left open, answer.

        A new id's name is checked here, where every front creates one; an id already on disk (an older broker
        took any name) keeps working.
        """
        timeout = checked_timeout(timeout_ms)
        old = self._txns.get(tid)
        if old is None:
            checked_name(NameKind.TRANSACTIONAL_ID, tid)
            txn = ProducerTxn(tid, self._fresh_producer_id(), 0, timeout, owner, sends=SendWindow(self.send_window))
            items = [self._record(txn, TxnRecord.INIT)]
            _, end = self.store.put(items)
            self._txns[tid] = txn
            self._tid_of[txn.producer_id] = tid
        else:
            move = transition(old.state, TxnEvent.INIT)
            bumped = ProducerTxn(tid, old.producer_id, old.epoch + 1, timeout, owner, number=old.number,
                                 sends=SendWindow(self.send_window))
            items = [self._record(bumped, TxnRecord.INIT)]
            if move.action is TxnAction.ABORT_THEN_INIT:
                items.insert(0, self._record(old, TxnRecord.ABORT, aborted_by=AbortedBy.NEW_EPOCH))
            _, end = self.store.put(items)
            if move.action is TxnAction.ABORT_THEN_INIT:
                self._aborted(old, AbortedBy.NEW_EPOCH)
            self._txns[tid] = bumped
            txn = bumped
        await self._durable(end)
        return {"transactional_id": tid, "producer_id": txn.producer_id, "epoch": txn.epoch, "transaction_timeout_ms": txn.timeout_ms}

    def begin(self, tid: str, producer_id: int, epoch: int, sequence: int) -> dict[str, Any]:
        txn = self._current(tid, producer_id, epoch)
        repeat = self._repeat(txn, TxnEvent.BEGIN, sequence)
        if repeat is not None:
            return repeat
        transition(txn.state, TxnEvent.BEGIN)
        if sequence != 0:
            raise OutOfOrderSequence(f"a transaction's begin carries sequence 0, not {sequence}", expected=0)
        number = txn.number + 1
        self.store.put([self._record(txn, TxnRecord.BEGIN, number=number)])
        txn.state, txn.number, txn.begun_ms, txn.ended_ms, txn.aborted_by = ProducerTxnState.ONGOING, number, self.now_ms(), None, None
        txn.items, txn.size, txn.acks, txn.message_count, txn.ack_count, txn.end_answer = [], 0, [], 0, 0, None
        answer = {"transactional_id": tid, "producer_id": producer_id, "epoch": epoch, "transaction": number,
                  "state": txn.state.value, "sequence": sequence}
        self._remember(txn, TxnEvent.BEGIN, sequence, answer)
        # Not waited for on disk: an open transaction is aborted by recovery whatever happens, and a begin record lost
        # to a power cut only makes the producer's next request INVALID_TXN_STATE instead of TRANSACTION_ABORTED. The
        # commit's fsync covers it. (One fsync per transaction, not two: `halfmq bench eos`.)
        return answer

    def add_messages(self, tid: str, producer_id: int, epoch: int, sequence: int, items: list[PutItem],
                     missing_topics: list[TopicConfig], *, principal: str | None = None) -> dict[str, Any]:
        """Keep validated messages for the commit; create the topics they need once everything is accepted."""
        txn = self._current(tid, producer_id, epoch)
        repeat = self._repeat(txn, TxnEvent.ADD_MESSAGES, sequence)
        if repeat is not None:
            return repeat
        transition(txn.state, TxnEvent.ADD_MESSAGES)
        self._check_next(txn, sequence)
        # An estimate (UTF-8 names counted by characters) for the limit; the commit checks the exact fit to a segment.
        size = sum(HEADER_SIZE + len(i.topic) + len(i.body) + sum(len(k) + len(v) + 2 for k, v in i.properties.items()) for i in items)
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
        answer = {"transactional_id": tid, "sequence": sequence, "messages": len(txn.items),
                  "results": [{"msg_id": i.properties.get("UNIQ_KEY", ""), "topic": i.topic, "queue_id": i.queue_id} for i in items]}
        self._remember(txn, TxnEvent.ADD_MESSAGES, sequence, answer)
        return answer

    def add_acks(self, tid: str, producer_id: int, epoch: int, sequence: int, receipts: list[ReceiptHandle]) -> dict[str, Any]:
        """Hold consumed deliveries in the transaction: invisible to their group until it ends."""
        txn = self._current(tid, producer_id, epoch)
        repeat = self._repeat(txn, TxnEvent.ADD_ACKS, sequence)
        if repeat is not None:
            return repeat
        transition(txn.state, TxnEvent.ADD_ACKS)
        self._check_next(txn, sequence)
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
        self._acks.check_held(fresh)
        if len(txn.acks) + len(fresh) > self.limits.max_acks:
            raise TransactionTooLarge(f"a transaction holds at most {self.limits.max_acks} acks", max_acks=self.limits.max_acks)
        self._acks.hold(fresh)
        for h in fresh:
            self._held_by[_key(h)] = tid
        txn.acks.extend(fresh)
        txn.ack_count = len(txn.acks)
        answer = {"transactional_id": tid, "sequence": sequence, "acks": len(txn.acks)}
        self._remember(txn, TxnEvent.ADD_ACKS, sequence, answer)
        return answer

    async def commit(self, tid: str, producer_id: int, epoch: int) -> dict[str, Any]:
        """ONE write group: every message, then the commit record with the acks; a repeat gets the first answer."""
        txn = self._current(tid, producer_id, epoch)
        move = transition(txn.state, TxnEvent.COMMIT)
        if move.action is TxnAction.NONE:
            assert txn.end_answer is not None
            return {**txn.end_answer, "duplicate": True}
        acks: list[AckRef] = [(h.group, h.topic, h.queue_id, h.offset) for h in txn.acks]
        marker = self._record(txn, TxnRecord.COMMIT, body=rec.encode_acks(acks))
        marker.properties[rec.MESSAGES] = str(len(txn.items))
        group = [*txn.items, marker]
        if not self.store.fits(group):
            raise TransactionTooLarge("the transaction does not fit one commit-log segment; commit smaller transactions")
        results, end = self.store.put(group)
        self._acks.settle_held(txn.acks)
        self._release_keys(txn)
        self.held.release(tid)
        txn.state, txn.ended_ms = move.state, self.now_ms()
        txn.end_answer = self._end_answer(txn, [
            {"msg_id": r.properties.get("UNIQ_KEY", ""), "topic": r.topic, "queue_id": r.queue_id, "queue_offset": r.queue_offset,
             "commit_log_offset": r.commit_log_offset} for r in results[:-1]])
        txn.items, txn.acks = [], []
        txn.last_event = txn.last_answer = None  # numbers count within one transaction: a begin after this is new
        self.commits += 1
        await self._durable(end)
        return {**txn.end_answer, "duplicate": False}

    async def abort(self, tid: str, producer_id: int | None, epoch: int | None, by: AbortedBy = AbortedBy.PRODUCER) -> dict[str, Any]:
        """The producer's abort (or an operator's, ``producer_id=None``): nothing becomes visible, acked receipts come back."""
        txn = self._current(tid, producer_id, epoch) if producer_id is not None and epoch is not None else self.get(tid)
        event = TxnEvent.ABORT if by is AbortedBy.PRODUCER else TxnEvent.EXPIRE
        move = transition(txn.state, event)
        if move.action is TxnAction.NONE:
            answer = txn.end_answer or self._end_answer(txn, [])
            return {**answer, "duplicate": True}
        _, end = self.store.put([self._record(txn, TxnRecord.ABORT, aborted_by=by)])
        self._aborted(txn, by)
        await self._durable(end)
        assert txn.end_answer is not None
        return {**txn.end_answer, "duplicate": False}

    def abort_expired(self) -> list[str]:
        """Abort every open transaction past its timeout (the decision is ``producer_timeout.expired``)."""
        now = self.now_ms()
        due = expired({t.transactional_id: (t.begun_ms, t.timeout_ms) for t in self._txns.values()
                       if t.state is ProducerTxnState.ONGOING}, now)
        for tid in due:
            txn = self._txns[tid]
            self.store.put([self._record(txn, TxnRecord.ABORT, aborted_by=AbortedBy.TIMEOUT)])
            self._aborted(txn, AbortedBy.TIMEOUT)
            log.warning("transaction %d of %s aborted: open longer than %d ms", txn.number, tid, txn.timeout_ms)
        return due

    # --- idempotent sends (outside transactions) ------------------------------------
    async def new_producer_id(self, owner: str) -> dict[str, Any]:
        """An idempotent producer id of ``owner`` without a transactional id (Kafka's InitProducerId): durable, epoch 0."""
        txn = ProducerTxn("", self._fresh_producer_id(), 0, 0, owner, sends=SendWindow(self.send_window), last_used_ms=self.now_ms())
        _, end = self.store.put([self._record(txn, TxnRecord.INIT)])
        self._idempotent[txn.producer_id] = txn
        await self._durable(end)
        return {"producer_id": txn.producer_id, "epoch": txn.epoch}

    def _fresh_producer_id(self) -> int:
        """A random 63-bit producer id no producer holds: an id names its owner's numbers and must not be guessed."""
        while True:
            producer_id = secrets.randbits(63)
            if producer_id and producer_id not in self._idempotent and producer_id not in self._tid_of:
                return producer_id

    def sender(self, producer_id: int, epoch: int, principal: str) -> ProducerTxn:
        """The producer an idempotent send names (from ``init`` or ``new_producer_id``), if ``principal`` obtained it.

        Every numbered send of every front comes through here. Another principal's id: PRODUCER_ID_NOT_OWNED
        (before anything else about it is told). Fenced, unknown or expired: refused.
        """
        tid = self._tid_of.get(producer_id)
        if tid is not None:
            owned = self._txns[tid]
            if owned.owner != principal:
                self._not_owned(owned, principal)
            return self._current(tid, producer_id, epoch)
        txn = self._idempotent.get(producer_id)
        now = self.now_ms()
        if txn is not None and now - txn.last_used_ms > self.producer_id_expiry_ms:
            del self._idempotent[producer_id]
            txn = None
        if txn is None:
            raise UnknownProducerId(f"producer id {producer_id} is unknown or expired: get a new one (POST /v1/producer-ids)")
        if txn.owner != principal:
            self._not_owned(txn, principal)
        if epoch != txn.epoch:
            raise InvalidProducerEpoch(f"producer id {producer_id} has epoch {txn.epoch}, not {epoch}")
        txn.last_used_ms = now
        return txn

    def expire_idle_producers(self) -> int:
        """Forget producer ids (without a transactional id) idle longer than the expiry, so their state does not grow forever."""
        now = self.now_ms()
        idle = [pid for pid, t in self._idempotent.items() if now - t.last_used_ms > self.producer_id_expiry_ms]
        for pid in idle:
            del self._idempotent[pid]
        return len(idle)

    def check_acting(self, tid: str, principal: str) -> None:
        """PRODUCER_ID_NOT_OWNED when ``tid``'s producer id was obtained by another principal (the steps of its
        transactions: begin, messages, acks, commit, abort). Its ``init`` is not checked: a new instance of any
        principal allowed on the transactional id takes it over, fencing the old one. Unknown ids are the step's to
        refuse; an id initialised before ids were bound has no owner and is left to the transactional-id policy."""
        txn = self._txns.get(tid)
        if txn is not None and txn.owner is not None and txn.owner != principal:
            self._not_owned(txn, principal)

    @staticmethod
    def _not_owned(txn: ProducerTxn, principal: str) -> NoReturn:
        if txn.owner is None:  # handed out before ids were bound to principals: nobody may prove it is theirs
            raise UnknownProducerId(f"producer id {txn.producer_id} was obtained before producer ids were bound to "
                                    "principals: get a new one (POST /v1/producer-ids, or init the transactional id)")
        raise ProducerIdNotOwned(f"producer id {txn.producer_id} was obtained by another principal, not {principal!r}")

    def sent_before(self, txn: ProducerTxn, sequence: int, key: SendKey) -> Any:
        """None when ``sequence`` is new inside the window (store it); the stored answer when it is a repeat.

        A repeat is answered only when it is the same request (``key``: the same send path, topic and group);
        a number used for another request is SEQUENCE_NUMBER_REUSED, and nothing is stored. A repeat stored
        so long ago that its answer is forgotten answers ``OLD_REPEAT`` (a plain send then answers success
        without offsets, as Kafka does; a half send, whose transaction id the producer needs, is refused).
        Beyond the window: OUT_OF_ORDER_SEQUENCE.
        """
        verdict = txn.sends.decide(sequence)
        if verdict is Verdict.STORE:
            return None
        if verdict is Verdict.REPEAT:
            entry = txn.sends.answers[sequence]
            if type(entry) is StoredRef:
                entry = txn.sends.answers[sequence] = self._read_back(entry.record_offset, entry.sizes, entry.path)
            used_for, answer = entry
            if used_for != key:
                raise SequenceNumberReused(
                    f"send sequence {sequence} of producer id {txn.producer_id} was used for a {used_for[0]} send to "
                    f"another topic or group, or of another kind: number each request once", sequence=sequence)
            return answer
        if verdict is Verdict.OLD_REPEAT:
            if key[0] == rec.SEND_HALF:
                raise DuplicateSequenceNumber(f"send sequence {sequence} was stored before and its answer is no longer kept",
                                              sequence=sequence)
            return Verdict.OLD_REPEAT
        expected = txn.sends.next_expected
        raise OutOfOrderSequence(f"send sequence {sequence} is beyond the window: the next missing one is {expected}, "
                                 f"at most {txn.sends.size} may be outstanding", expected=expected)

    def send_record(self, txn: ProducerTxn, sequence: int, items: list[PutItem], path: str = rec.SEND_MESSAGES) -> PutItem:
        """The record that goes last in the send's write group: the sequence number, and the sizes to read the answer back."""
        # Built inline (not through _record): this runs on every numbered send, and Enum.value and the general
        # path showed in its profile. The same properties _record would write.
        props = {rec.TXN_ID: txn.transactional_id, rec.TXN_OP: _SEND_OP, rec.PRODUCER_ID: str(txn.producer_id),
                 rec.EPOCH: str(txn.epoch), rec.TXN_NO: str(txn.number), rec.SEQUENCE: str(sequence), rec.SEND_PATH: path}
        sizes = [record_size(i.topic.encode(), encode_properties(i.properties), i.body) for i in items]
        return PutItem(TXN_STATE_TOPIC, 0, rec.encode_sizes(sizes), props)

    def sent(self, txn: ProducerTxn, sequence: int, key: SendKey, answer: Any) -> None:
        """The send numbered ``sequence`` was stored for ``key``: a repeat of it gets ``answer``."""
        txn.sends.stored(sequence, (key, answer))

    def _read_back(self, record_offset: int, sizes: list[int], path: str) -> tuple[SendKey, Any]:
        """A numbered send's key and answer, read back from its messages after a restart."""
        offset = record_offset - sum(sizes)
        out = []
        for size in sizes:
            msg = self.store.read_at(offset)
            out.append({"status": "SEND_OK", "msg_id": msg.properties.get("UNIQ_KEY", ""), "topic": msg.topic, "queue_id": msg.queue_id,
                        "queue_offset": msg.queue_offset, "commit_log_offset": msg.commit_log_offset,
                        "transaction_id": msg.properties.get("TRANSACTION_ID", "")})
            offset += size
        if path == rec.SEND_HALF:
            [half] = out
            key = (rec.SEND_HALF, msg.properties.get(names.PRODUCER_GROUP, ""), msg.properties.get(names.REAL_TOPIC, ""))
            return key, {k: half[k] for k in ("status", "transaction_id", "msg_id", "commit_log_offset", "queue_offset")}
        for result in out:
            del result["transaction_id"]
        return (rec.SEND_MESSAGES, "", out[0]["topic"] if out else ""), out

    # --- checks -----------------------------------------------------------------
    def _current(self, tid: str, producer_id: int, epoch: int) -> ProducerTxn:
        txn = self.get(tid)
        if producer_id != txn.producer_id:
            raise InvalidProducerEpoch(f"producer id {producer_id} is not {tid!r}'s ({txn.producer_id})")
        if epoch < txn.epoch:
            raise ProducerFenced(f"epoch {epoch} of {tid!r} is fenced by epoch {txn.epoch}: another instance initialised it",
                                 epoch=txn.epoch)
        if epoch > txn.epoch:
            raise InvalidProducerEpoch(f"epoch {epoch} of {tid!r} was never handed out (current {txn.epoch})")
        return txn

    @staticmethod
    def _repeat(txn: ProducerTxn, event: TxnEvent, sequence: int) -> dict[str, Any] | None:
        """The stored answer when this is a retry of the last request (same kind, same sequence)."""
        if txn.last_event is event and txn.last_sequence == sequence and txn.last_answer is not None:
            return {**txn.last_answer, "duplicate": True}
        return None

    @staticmethod
    def _check_next(txn: ProducerTxn, sequence: int) -> None:
        if sequence != txn.last_sequence + 1:
            raise OutOfOrderSequence(f"expected sequence {txn.last_sequence + 1}, not {sequence}", expected=txn.last_sequence + 1)

    @staticmethod
    def _remember(txn: ProducerTxn, event: TxnEvent, sequence: int, answer: dict[str, Any]) -> None:
        txn.last_event, txn.last_sequence, txn.last_answer = event, sequence, answer

    # --- bookkeeping ------------------------------------------------------------
    def _aborted(self, txn: ProducerTxn, by: AbortedBy) -> None:
        self._acks.release_held(txn.acks)
        self.held.release(txn.transactional_id)
        self._release_keys(txn)
        txn.state, txn.ended_ms, txn.aborted_by = ProducerTxnState.COMPLETE_ABORT, self.now_ms(), by
        txn.end_answer = self._end_answer(txn, [])
        txn.items, txn.acks = [], []
        txn.last_event = txn.last_answer = None
        self.aborts += 1

    def _release_keys(self, txn: ProducerTxn) -> None:
        for h in txn.acks:
            self._held_by.pop(_key(h), None)

    @staticmethod
    def _end_answer(txn: ProducerTxn, results: list[dict[str, Any]]) -> dict[str, Any]:
        return {"transactional_id": txn.transactional_id, "producer_id": txn.producer_id, "epoch": txn.epoch,
                "transaction": txn.number, "state": txn.state.value, "messages": txn.message_count, "acks": txn.ack_count,
                "aborted_by": txn.aborted_by.value if txn.aborted_by else None, "results": results}

    def _record(self, txn: ProducerTxn, kind: TxnRecord, *, number: int | None = None, aborted_by: AbortedBy | None = None,
                body: bytes = b"") -> PutItem:
        props = {rec.TXN_ID: txn.transactional_id, rec.TXN_OP: kind.value, rec.PRODUCER_ID: str(txn.producer_id),
                 rec.EPOCH: str(txn.epoch), rec.TXN_NO: str(txn.number if number is None else number)}
        if kind is TxnRecord.INIT:
            props[rec.TIMEOUT_MS] = str(txn.timeout_ms)
            if txn.owner is not None:
                props[rec.OWNER] = txn.owner
        if aborted_by is not None:
            props[rec.ABORTED_BY] = aborted_by.value
        return PutItem(TXN_STATE_TOPIC, 0, body, props)

    # --- restart ----------------------------------------------------------------
    def _replay(self) -> None:
        """Rebuild every id from its records; re-apply committed acks; abort what was open (it cannot resume)."""
        started = time.monotonic()
        for record in self._scan():
            self._replay_one(record)
        left_open = [t for t in self._txns.values() if t.state is ProducerTxnState.ONGOING]
        if left_open:
            self.store.put([self._record(t, TxnRecord.ABORT, aborted_by=AbortedBy.RECOVERY) for t in left_open])
            for txn in left_open:
                self._aborted(txn, AbortedBy.RECOVERY)
            log.warning("aborted %d producer transactions left open by the last run: %s", len(left_open),
                        ", ".join(t.transactional_id for t in left_open))
        self.expire_idle_producers()
        if self._txns:
            log.info("producer transactions rebuilt in %.3fs: %d transactional ids", time.monotonic() - started, len(self._txns))

    def _replay_one(self, record: StoredMessage) -> None:
        props = record.properties
        tid, kind = props.get(rec.TXN_ID, ""), props.get(rec.TXN_OP, "")
        producer_id, epoch, number = int(props.get(rec.PRODUCER_ID, 0)), int(props.get(rec.EPOCH, 0)), int(props.get(rec.TXN_NO, 0))
        if not tid:  # a producer id without a transactional id
            self._replay_idempotent(record, kind, producer_id, epoch)
            return
        if kind == TxnRecord.INIT:
            self._txns[tid] = ProducerTxn(tid, producer_id, epoch, int(props.get(rec.TIMEOUT_MS, 60_000)), props.get(rec.OWNER),
                                          number=number, sends=SendWindow(self.send_window))
            self._tid_of[producer_id] = tid
            return
        txn = self._txns.get(tid)
        if txn is None:
            return
        if kind == TxnRecord.SEND:
            if epoch == txn.epoch:
                self._replay_send(txn, record)
        elif kind == TxnRecord.BEGIN:
            txn.state, txn.number, txn.begun_ms, txn.aborted_by = ProducerTxnState.ONGOING, number, record.store_timestamp, None
        elif kind == TxnRecord.COMMIT:
            acks = rec.decode_acks(record.body)
            for group, topic, queue_id, offset in acks:
                self._acks.restore_acked(group, topic, queue_id, offset)
            txn.state, txn.ended_ms = ProducerTxnState.COMPLETE_COMMIT, record.store_timestamp
            txn.message_count, txn.ack_count = int(props.get(rec.MESSAGES, 0)), len(acks)
            txn.end_answer = self._end_answer(txn, [])
        elif kind == TxnRecord.ABORT:
            txn.state, txn.ended_ms = ProducerTxnState.COMPLETE_ABORT, record.store_timestamp
            txn.aborted_by = AbortedBy(props.get(rec.ABORTED_BY, AbortedBy.PRODUCER.value))
            txn.end_answer = self._end_answer(txn, [])

    def _replay_idempotent(self, record: StoredMessage, kind: str, producer_id: int, epoch: int) -> None:
        if kind == TxnRecord.INIT:
            self._idempotent[producer_id] = ProducerTxn("", producer_id, epoch, 0, record.properties.get(rec.OWNER),
                                                        sends=SendWindow(self.send_window), last_used_ms=record.store_timestamp)
            return
        txn = self._idempotent.get(producer_id)
        if txn is not None and kind == TxnRecord.SEND and epoch == txn.epoch:
            self._replay_send(txn, record)
            txn.last_used_ms = max(txn.last_used_ms, record.store_timestamp)

    @staticmethod
    def _replay_send(txn: ProducerTxn, record: StoredMessage) -> None:
        props = record.properties
        ref = StoredRef(record.commit_log_offset, rec.decode_sizes(record.body), props.get(rec.SEND_PATH, rec.SEND_MESSAGES))
        txn.sends.stored(int(props.get(rec.SEQUENCE, -1)), ref)

    def _scan(self, batch: int = 512) -> Iterator[StoredMessage]:
        offset = 0
        while True:
            chunk = self.store.read_entries(TXN_STATE_TOPIC, 0, offset, batch)
            if not chunk:
                return
            yield from (m for m in chunk if type(m) is not DamagedEntry)
            offset = chunk[-1].queue_offset + 1


def _key(h: ReceiptHandle) -> tuple[str, str, int, int]:
    return (h.group, h.topic, h.queue_id, h.offset)
