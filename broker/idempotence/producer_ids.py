"""The idempotent producer (DESIGN section 11): producer ids, their owners and epochs, the window of numbered sends.

Kafka's InitProducerId and its broker-side producer state: a producer id is handed out durably (an ``init``
record in HALFMQ_TXN_STATE) to the principal that asked, alone (POST /v1/producer-ids) or as a
transactional id's producer (``producer_transactions`` binds those here on every init). ``sender`` is the
one door every numbered send goes through, whichever route or front: another principal gets
PRODUCER_ID_NOT_OWNED, an old epoch is fenced, an id idle past its expiry is forgotten. ``sent_before``
answers a repeat from the window only when it is the same request (``SendKey``: plain or half, the same
topic and group), else SEQUENCE_NUMBER_REUSED.

Each numbered send writes a ``send`` record last in its own write group (``send_record``): its sequence
number and the sizes of its messages. The window keeps per number only where the send's records start and
how many there are (``SentRef``, as Kafka keeps a batch's metadata, not its contents): a repeat's answer
(every message's id and offsets) is read back from those records, a rare path bounded by the batch limit.
So what a producer id holds is a constant per number, whatever its sends held, and one principal's
producers hold at most what ``principal_caps`` allows. After a restart the same refs come back from the state
snapshot (``restore_alone``, ``window_of``) and the send records after it, replayed by the coordinator's one scan
of the log (``replay_alone``, ``replay_send``), so a restart ends with the state the broker had.
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import msgspec

from halfmq.broker.half_messages import record_names as half_names
from halfmq.broker.store.message_store import MessageStore, PutItem
from halfmq.broker.store.record import StoredMessage, stored_size
from halfmq.broker.store.topics import TXN_STATE_TOPIC
from halfmq.broker.timers.recall import handle_of
from halfmq.broker.timers.routing import visible_place
from halfmq.errors import (
    DuplicateSequenceNumber,
    InvalidProducerEpoch,
    OutOfOrderSequence,
    SendWindowsFull,
    SequenceNumberReused,
    TooManyProducerIds,
    UnknownProducerId,
)

from . import producer_records as rec
from .principal_caps import PrincipalCaps, Room, retry_after_seconds, room
from .producer_records import SendKind, TxnRecord
from .producer_state import ProducerState, current, not_owned, state_record
from .send_window import DEFAULT_SIZE, SendWindow, Verdict

Durable = Callable[[int], Awaitable[None]]
_SEND_OP = TxnRecord.SEND.value
_SEND_PATHS = {kind: kind.value for kind in SendKind}  # Enum.value showed in a numbered send's profile


class SendKey(NamedTuple):
    """What a numbered send used its number for. A repeat must match it."""

    kind: SendKind
    group: str  # the producer group of a half send; "" for a plain one
    topic: str


class ProducerIdResult(msgspec.Struct, frozen=True):
    producer_id: int
    epoch: int


class SentMessage(msgspec.Struct, frozen=True):
    """Where one message of a numbered plain send was stored: what a repeat of the send is answered."""

    msg_id: str
    topic: str
    queue_id: int
    queue_offset: int  # -1 for a timed message (its real topic and queue above)
    commit_log_offset: int
    deliver_at_ms: int | None = None  # a timed message's due time
    recall_handle: str | None = None  # a timed message's (timers.recall)


class SentHalf(msgspec.Struct, frozen=True):
    """Where a numbered half send's half message was stored, and its transaction: what a repeat is answered."""

    transaction_id: str
    msg_id: str
    commit_log_offset: int
    queue_offset: int


SentAnswer = list[SentMessage] | SentHalf


class SentRef(NamedTuple):
    """What a window remembers of one stored number: which send it was, where its records start, how many.

    About 200 bytes per number in memory (tracemalloc, offsets past 2**32), the same for a send of one message
    or of 1,000: the answer itself (ids, topics, offsets) is read back from the records when a repeat asks.
    """

    kind: SendKind
    first_offset: int  # the commit-log offset of the send's first record (a half send: its half message)
    records: int  # its records before the send record: the messages of a plain send, a half and its companions


@dataclass
class Holdings:
    """One principal's producers in memory: its ids obtained alone (least recently used first), and how many
    numbers the windows of all its producers (transactional ids' too) remember."""

    alone: OrderedDict[int, ProducerState] = field(default_factory=OrderedDict)
    sequences: int = 0


def sent_messages(results: list) -> list[SentMessage]:
    """A plain send's answer (its first, or a repeat's), from the store's results (or records) of its messages."""
    sent = []
    for r in results:
        topic, queue_id, queue_offset, due = visible_place(r.topic, r.queue_id, r.queue_offset, r.properties)
        sent.append(SentMessage(r.properties.get("UNIQ_KEY", ""), topic, queue_id, queue_offset, r.commit_log_offset, due,
                                handle_of(r.topic, r.queue_id, r.queue_offset, r.commit_log_offset, r.properties)))
    return sent


class ProducerIds:
    def __init__(self, store: MessageStore, durable: Durable, *, clock: Callable[[], float] = time.time,
                 send_window: int = DEFAULT_SIZE, producer_id_expiry_ms: int = 24 * 3600 * 1000,
                 caps: PrincipalCaps | None = None) -> None:
        self.store = store
        self.send_window = send_window
        self.producer_id_expiry_ms = producer_id_expiry_ms
        self.caps = caps or PrincipalCaps()
        self._durable = durable
        self._clock = clock
        self._alone: dict[int, ProducerState] = {}  # producer ids without a transactional id (POST /v1/producer-ids)
        self._bound: dict[int, ProducerState] = {}  # producer id -> its transactional id's current producer
        self._held: dict[str, Holdings] = {}  # principal -> what its producers hold ("": ids obtained before ids had owners)

    def now_ms(self) -> int:
        return int(self._clock() * 1000)

    def window(self) -> SendWindow:
        return SendWindow(self.send_window)

    # --- ids ------------------------------------------------------------------------
    async def new_producer_id(self, owner: str) -> ProducerIdResult:
        """An idempotent producer id of ``owner`` without a transactional id (Kafka's InitProducerId): durable, epoch 0.

        Within ``owner``'s cap of live ids (``principal_caps``): past it, its least recently used id idle long
        enough is forgotten, or TOO_MANY_PRODUCER_IDS (429), before anything is written.
        """
        self._make_room(owner, more_ids=1, more_sequences=0)
        producer = ProducerState(transactional_id="", producer_id=self.fresh_id(), epoch=0, owner=owner, sends=self.window(),
                            last_used_ms=self.now_ms())
        _, end = self.store.put([state_record(producer, TxnRecord.INIT)])
        self._hold_alone(producer)
        await self._durable(end)
        return ProducerIdResult(producer.producer_id, producer.epoch)

    def fresh_id(self) -> int:
        """A random 63-bit producer id no producer holds: an id names its owner's numbers and must not be guessed."""
        while True:
            producer_id = secrets.randbits(63)
            if producer_id and producer_id not in self._alone and producer_id not in self._bound:
                return producer_id

    def bind(self, producer: ProducerState) -> None:
        """``producer`` is now its transactional id's (a new id, a new epoch, or one replayed): sends name it from here.

        The window of the epoch it replaces is dropped with it (its numbers are fenced), and no longer counts
        towards its principal's remembered numbers.
        """
        old = self._bound.get(producer.producer_id)
        if old is producer:
            return
        if old is not None:
            self._holdings(old.owner).sequences -= len(old.sends.answers)
        self._bound[producer.producer_id] = producer
        self._holdings(producer.owner).sequences += len(producer.sends.answers)

    def unbind(self, producer: ProducerState) -> None:
        """``producer`` (a transactional id's) is forgotten: its id expired, or an init gave the id a new producer id."""
        if self._bound.get(producer.producer_id) is producer:
            del self._bound[producer.producer_id]
            held = self._holdings(producer.owner)
            held.sequences -= len(producer.sends.answers)
            if not held.alone and not held.sequences:
                del self._held[producer.owner or ""]

    def sender(self, producer_id: int, epoch: int, principal: str) -> ProducerState:
        """The producer an idempotent send names (a transactional id's or one obtained alone), if ``principal`` obtained it.

        Every numbered send of every front comes through here. Another principal's id: PRODUCER_ID_NOT_OWNED
        (before anything else about it is told). Fenced, unknown or expired: refused.
        """
        bound = self._bound.get(producer_id)
        now = self.now_ms()
        if bound is not None:
            if bound.owner != principal:
                not_owned(bound, principal)
            bound = current(bound, producer_id, epoch)
            bound.last_used_ms = now  # a transactional id used for numbered sends only is not idle (its expiry)
            return bound
        producer = self._alone.get(producer_id)
        if producer is not None and now - producer.last_used_ms > self.producer_id_expiry_ms:
            self._forget(producer_id)
            producer = None
        if producer is None:
            raise UnknownProducerId(f"producer id {producer_id} is unknown, expired, or forgotten for its principal's newer "
                                    "ones: get a new one (POST /v1/producer-ids)")
        if producer.owner != principal:
            not_owned(producer, principal)
        if epoch != producer.epoch:
            raise InvalidProducerEpoch(f"producer id {producer_id} has epoch {producer.epoch}, not {epoch}")
        self._used(producer, now)
        return producer

    def expire_idle_producers(self) -> int:
        """Forget producer ids (without a transactional id) idle longer than the expiry, so their state does not grow forever."""
        now = self.now_ms()
        idle = [pid for pid, p in self._alone.items() if now - p.last_used_ms > self.producer_id_expiry_ms]
        for pid in idle:
            self._forget(pid)
        return len(idle)

    def forget_past_caps(self) -> int:
        """Forget each principal's least recently used ids obtained alone while it holds more than its caps allow.

        After a restart's replay (which brings back every id of the last day, also those forgotten for newer
        ones) and so after a lower cap was set: the ids kept are the ones the running broker kept.
        """
        forgotten = 0
        for held in list(self._held.values()):
            while held.alone and (len(held.alone) > self.caps.producer_ids or held.sequences > self.caps.sequences):
                self._forget(next(iter(held.alone)))
                forgotten += 1
        return forgotten

    def holdings(self, principal: str) -> Holdings:
        """What ``principal``'s producers hold now (empty if nothing)."""
        return self._held.get(principal) or Holdings()

    # --- what each principal holds ----------------------------------------------------
    def _holdings(self, owner: str | None) -> Holdings:
        return self._held.setdefault(owner or "", Holdings())

    def _hold_alone(self, producer: ProducerState) -> None:
        if producer.producer_id in self._alone:
            self._forget(producer.producer_id)
        self._alone[producer.producer_id] = producer
        held = self._holdings(producer.owner)
        held.alone[producer.producer_id] = producer
        held.sequences += len(producer.sends.answers)

    def _used(self, producer: ProducerState, now_ms: int) -> None:
        """``producer`` (obtained alone) was used at ``now_ms``: the most recently used of its principal's."""
        producer.last_used_ms = max(producer.last_used_ms, now_ms)
        self._holdings(producer.owner).alone.move_to_end(producer.producer_id)

    def _forget(self, producer_id: int) -> None:
        """Forget a producer id obtained alone (expired, or its principal's least recently used past a cap)."""
        producer = self._alone.pop(producer_id, None)
        if producer is None:
            return
        key = producer.owner or ""
        held = self._held[key]
        held.alone.pop(producer_id, None)
        held.sequences -= len(producer.sends.answers)
        if not held.alone and not held.sequences:
            del self._held[key]

    def _make_room(self, owner: str | None, *, more_ids: int, more_sequences: int, sending: int | None = None) -> None:
        """Room for ``owner`` to take ``more_ids`` and ``more_sequences`` (``principal_caps.room``), or a 429.

        ``sending``: the producer id the room is for, which is never the one forgotten.
        """
        held = self._holdings(owner)
        while True:
            least = next((p for pid, p in held.alone.items() if pid != sending), None)
            idle = None if least is None else self.now_ms() - least.last_used_ms
            verdict = room(self.caps, ids=len(held.alone), sequences=held.sequences, more_ids=more_ids,
                           more_sequences=more_sequences, least_recent_idle_ms=idle)
            if verdict is Room.FITS:
                return
            if verdict is Room.FORGET_LEAST_RECENT and least is not None:
                self._forget(least.producer_id)
                continue
            retry_after = retry_after_seconds(self.caps, idle)
            if more_ids:
                raise TooManyProducerIds(
                    f"principal {owner!r} holds {len(held.alone)} producer ids (at most {self.caps.producer_ids}), each used "
                    f"within {self.caps.evictable_after_ms // 1000} s: reuse a Producer instead of making new ones",
                    retry_after=retry_after, limit=self.caps.producer_ids, held=len(held.alone))
            raise SendWindowsFull(
                f"principal {owner!r}'s producers remember {held.sequences} numbered sends (at most {self.caps.sequences}); "
                "nothing was stored", retry_after=retry_after, limit=self.caps.sequences, held=held.sequences)

    # --- numbered sends ---------------------------------------------------------------
    def sent_before(self, producer: ProducerState, sequence: int, key: SendKey) -> SentAnswer | Verdict | None:
        """None when ``sequence`` is new inside the window (store it); the stored answer when it is a repeat.

        A repeat is answered only when it is the same request (``key``: the same send kind, topic and group);
        a number used for another request is SEQUENCE_NUMBER_REUSED, and nothing is stored. A repeat stored
        so long ago that its answer is forgotten (or its records are past retention) answers ``Verdict.OLD_REPEAT``
        (a plain send then answers success without offsets, as Kafka does; a half send, whose transaction id the
        producer needs, is refused). Beyond the window: OUT_OF_ORDER_SEQUENCE. A new number past its principal's
        cap of remembered numbers: SEND_WINDOWS_FULL (429), before anything is written.
        """
        verdict = producer.sends.decide(sequence)
        if verdict is Verdict.STORE:
            growth = producer.sends.growth(sequence)
            if growth > 0:
                self._make_room(producer.owner, more_ids=0, more_sequences=growth, sending=producer.producer_id)
            return None
        if verdict is Verdict.REPEAT:
            answer = self._repeat(producer, sequence, key)
            if answer is not None:
                return answer
            verdict = Verdict.OLD_REPEAT
        if verdict is Verdict.OLD_REPEAT:
            if key[0] == SendKind.HALF:
                raise DuplicateSequenceNumber(f"send sequence {sequence} was stored before and its answer is no longer kept",
                                              sequence=sequence)
            return Verdict.OLD_REPEAT
        expected = producer.sends.next_expected
        raise OutOfOrderSequence(f"send sequence {sequence} is beyond the window: the next missing one is {expected}, "
                                 f"at most {producer.sends.size} may be outstanding", expected=expected)

    def _repeat(self, producer: ProducerState, sequence: int, key: SendKey) -> SentAnswer | None:
        """A remembered number's answer, read back from its records; None when they went with retention."""
        ref: SentRef = producer.sends.answers[sequence]
        if ref.kind == key.kind:
            if ref.first_offset < self.store.commit_log.min_offset:
                return None  # known as stored, its answer gone: as if forgotten
            used_for, answer = self._read_back(ref)
            if used_for == key:
                return answer
        raise SequenceNumberReused(
            f"send sequence {sequence} of producer id {producer.producer_id} was used for a {ref.kind.value} "
            f"send to another topic or group, or of another kind: number each request once", sequence=sequence)

    def send_record(self, producer: ProducerState, sequence: int, items: list[PutItem], kind: SendKind = SendKind.MESSAGES) -> PutItem:
        """The record that goes last in the send's write group: the sequence number, and the sizes to read the answer back."""
        # Built inline (not through state_record): this runs on every numbered send, and Enum.value and the general
        # path showed in its profile. The same properties state_record would write.
        props = {rec.TXN_ID: producer.transactional_id, rec.TXN_OP: _SEND_OP, rec.PRODUCER_ID: str(producer.producer_id),
                 rec.EPOCH: str(producer.epoch), rec.TXN_NO: str(producer.number), rec.SEQUENCE: str(sequence),
                 rec.SEND_PATH: _SEND_PATHS[kind]}
        sizes = [stored_size(i.topic, i.properties, i.body) for i in items]
        return PutItem(TXN_STATE_TOPIC, 0, rec.encode_sizes(sizes), props)

    def sent(self, producer: ProducerState, sequence: int, ref: SentRef) -> None:
        """The send numbered ``sequence`` was stored where ``ref`` says: a repeat of it is answered from there."""
        self._holdings(producer.owner).sequences += producer.sends.stored(sequence, ref)

    def _read_back(self, ref: SentRef) -> tuple[SendKey, SentAnswer]:
        """A numbered send's key and answer, read back from its records (at most the batch limit, 1,000)."""
        offset, stored = ref.first_offset, []
        for _ in range(1 if ref.kind is SendKind.HALF else ref.records):  # a half's answer is its first record's
            record = self.store.reads.read_at(offset)
            stored.append(record)
            offset += record.size
        if ref.kind is SendKind.HALF:
            half = stored[0]  # the transaction's first half (its companions, if any, follow it)
            props = half.properties
            key = SendKey(SendKind.HALF, props.get(half_names.PRODUCER_GROUP, ""), props.get(half_names.REAL_TOPIC, ""))
            return key, SentHalf(props.get(half_names.TRANSACTION_ID, ""), props.get(half_names.UNIQ_KEY, ""),
                                 half.commit_log_offset, half.queue_offset)
        answer = sent_messages(stored)
        return SendKey(SendKind.MESSAGES, "", answer[0].topic if answer else ""), answer

    # --- restart (driven by the coordinator's scan of HALFMQ_TXN_STATE) -------------------
    def replay_alone(self, record: StoredMessage) -> None:
        """A record of a producer id without a transactional id: its init, or one of its numbered sends."""
        props = record.properties
        kind, producer_id, epoch = props.get(rec.TXN_OP, ""), int(props.get(rec.PRODUCER_ID, 0)), int(props.get(rec.EPOCH, 0))
        if kind == TxnRecord.INIT:
            self._hold_alone(ProducerState(transactional_id="", producer_id=producer_id, epoch=epoch, owner=props.get(rec.OWNER),
                                      sends=self.window(), last_used_ms=record.store_timestamp))
            return
        producer = self._alone.get(producer_id)
        if producer is not None and kind == TxnRecord.SEND and epoch == producer.epoch:
            self.replay_send(producer, record)
            self._used(producer, record.store_timestamp)

    # --- the state snapshot (store.state_snapshot, producer_transactions.snapshot_state) ------
    def alone(self) -> list[ProducerState]:
        """The producer ids obtained alone that are kept now, least recently used first."""
        return sorted(self._alone.values(), key=lambda p: p.last_used_ms)

    def restore_alone(self, producer: ProducerState) -> None:
        """A producer id obtained alone, as a state snapshot kept it (call in least recently used order)."""
        self._hold_alone(producer)

    def window_of(self, high: int, answers: dict[int, SentRef]) -> SendWindow:
        """A window as a state snapshot kept it, at this broker's window size (numbers now outside it are dropped)."""
        window = self.window()
        window.high = high
        window.answers = {n: ref for n, ref in answers.items() if n > high - window.size}
        return window

    def replay_send(self, producer: ProducerState, record: StoredMessage) -> None:
        """A numbered send of ``producer``'s current epoch: its number is stored, its answer read back when asked.

        Its records end where its send record starts; the record's body has their sizes (``send_record``).
        """
        props = record.properties
        kind = SendKind.HALF if props.get(rec.SEND_PATH) == SendKind.HALF.value else SendKind.MESSAGES
        sizes = rec.decode_sizes(record.body)
        self.sent(producer, int(props.get(rec.SEQUENCE, -1)), SentRef(kind, record.commit_log_offset - sum(sizes), len(sizes)))
