"""The idempotent producer (DESIGN section 11): producer ids, their owners and epochs, the window of numbered sends.

Kafka's InitProducerId and its broker-side producer state: a producer id is handed out durably (an ``init``
record in HALFMQ_TXN_STATE) to the principal that asked, alone (POST /v1/producer-ids) or as a
transactional id's producer (``producer_transactions`` binds those here on every init). ``sender`` is the
one door every numbered send goes through, whichever route or front: another principal gets
PRODUCER_ID_NOT_OWNED, an old epoch is fenced, an id idle past its expiry is forgotten. ``sent_before``
answers a repeat from the window only when it is the same request (``SendKey``: plain or half, the same
topic and group), else SEQUENCE_NUMBER_REUSED.

Each numbered send writes a ``send`` record last in its own write group (``send_record``): its sequence
number and the sizes of its messages, so after a restart its answer is read back from the log
(``StoredRef``) instead of being kept on disk twice. The records are replayed by the coordinator's one
scan of the log (``replay_init``, ``replay_send``), so a restart reads the topic once.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import NamedTuple

import msgspec

from halfmq.broker.half_messages import record_names as half_names
from halfmq.broker.store.message_store import MessageStore, PutItem
from halfmq.broker.store.record import StoredMessage, encode_properties, record_size
from halfmq.broker.store.topics import TXN_STATE_TOPIC
from halfmq.broker.timers.routing import visible_place
from halfmq.errors import DuplicateSequenceNumber, InvalidProducerEpoch, OutOfOrderSequence, SequenceNumberReused, UnknownProducerId

from . import producer_records as rec
from .producer import Producer, current, not_owned, state_record
from .producer_records import SendKind, TxnRecord
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


class SentHalf(msgspec.Struct, frozen=True):
    """Where a numbered half send's half message was stored, and its transaction: what a repeat is answered."""

    transaction_id: str
    msg_id: str
    commit_log_offset: int
    queue_offset: int


SentAnswer = list[SentMessage] | SentHalf


@dataclass(frozen=True)
class StoredRef:
    """Where a numbered send's answer is after a restart: its send record's offset, the message sizes, the kind."""

    record_offset: int
    sizes: list[int]
    kind: SendKind


def sent_messages(results: list) -> list[SentMessage]:
    """The answer a plain send keeps for its repeats, from the store's results (or records) of its messages."""
    sent = []
    for r in results:
        topic, queue_id, queue_offset, due = visible_place(r.topic, r.queue_id, r.queue_offset, r.properties)
        sent.append(SentMessage(r.properties.get("UNIQ_KEY", ""), topic, queue_id, queue_offset, r.commit_log_offset, due))
    return sent


class ProducerIds:
    def __init__(self, store: MessageStore, durable: Durable, *, clock: Callable[[], float] = time.time,
                 send_window: int = DEFAULT_SIZE, producer_id_expiry_ms: int = 24 * 3600 * 1000) -> None:
        self.store = store
        self.send_window = send_window
        self.producer_id_expiry_ms = producer_id_expiry_ms
        self._durable = durable
        self._clock = clock
        self._alone: dict[int, Producer] = {}  # producer ids without a transactional id (POST /v1/producer-ids)
        self._bound: dict[int, Producer] = {}  # producer id -> its transactional id's current producer

    def now_ms(self) -> int:
        return int(self._clock() * 1000)

    def window(self) -> SendWindow:
        return SendWindow(self.send_window)

    # --- ids ------------------------------------------------------------------------
    async def new_producer_id(self, owner: str) -> ProducerIdResult:
        """An idempotent producer id of ``owner`` without a transactional id (Kafka's InitProducerId): durable, epoch 0."""
        producer = Producer(transactional_id="", producer_id=self.fresh_id(), epoch=0, owner=owner, sends=self.window(),
                            last_used_ms=self.now_ms())
        _, end = self.store.put([state_record(producer, TxnRecord.INIT)])
        self._alone[producer.producer_id] = producer
        await self._durable(end)
        return ProducerIdResult(producer.producer_id, producer.epoch)

    def fresh_id(self) -> int:
        """A random 63-bit producer id no producer holds: an id names its owner's numbers and must not be guessed."""
        while True:
            producer_id = secrets.randbits(63)
            if producer_id and producer_id not in self._alone and producer_id not in self._bound:
                return producer_id

    def bind(self, producer: Producer) -> None:
        """``producer`` is now its transactional id's (a new id, a new epoch, or one replayed): sends name it from here."""
        self._bound[producer.producer_id] = producer

    def sender(self, producer_id: int, epoch: int, principal: str) -> Producer:
        """The producer an idempotent send names (a transactional id's or one obtained alone), if ``principal`` obtained it.

        Every numbered send of every front comes through here. Another principal's id: PRODUCER_ID_NOT_OWNED
        (before anything else about it is told). Fenced, unknown or expired: refused.
        """
        bound = self._bound.get(producer_id)
        if bound is not None:
            if bound.owner != principal:
                not_owned(bound, principal)
            return current(bound, producer_id, epoch)
        producer = self._alone.get(producer_id)
        now = self.now_ms()
        if producer is not None and now - producer.last_used_ms > self.producer_id_expiry_ms:
            del self._alone[producer_id]
            producer = None
        if producer is None:
            raise UnknownProducerId(f"producer id {producer_id} is unknown or expired: get a new one (POST /v1/producer-ids)")
        if producer.owner != principal:
            not_owned(producer, principal)
        if epoch != producer.epoch:
            raise InvalidProducerEpoch(f"producer id {producer_id} has epoch {producer.epoch}, not {epoch}")
        producer.last_used_ms = now
        return producer

    def expire_idle_producers(self) -> int:
        """Forget producer ids (without a transactional id) idle longer than the expiry, so their state does not grow forever."""
        now = self.now_ms()
        idle = [pid for pid, p in self._alone.items() if now - p.last_used_ms > self.producer_id_expiry_ms]
        for pid in idle:
            del self._alone[pid]
        return len(idle)

    # --- numbered sends ---------------------------------------------------------------
    def sent_before(self, producer: Producer, sequence: int, key: SendKey) -> SentAnswer | Verdict | None:
        """None when ``sequence`` is new inside the window (store it); the stored answer when it is a repeat.

        A repeat is answered only when it is the same request (``key``: the same send kind, topic and group);
        a number used for another request is SEQUENCE_NUMBER_REUSED, and nothing is stored. A repeat stored
        so long ago that its answer is forgotten answers ``Verdict.OLD_REPEAT`` (a plain send then answers
        success without offsets, as Kafka does; a half send, whose transaction id the producer needs, is refused).
        Beyond the window: OUT_OF_ORDER_SEQUENCE.
        """
        verdict = producer.sends.decide(sequence)
        if verdict is Verdict.STORE:
            return None
        if verdict is Verdict.REPEAT:
            entry = producer.sends.answers[sequence]
            if type(entry) is StoredRef:
                entry = producer.sends.answers[sequence] = self._read_back(entry)
            used_for, answer = entry
            if used_for != key:
                raise SequenceNumberReused(
                    f"send sequence {sequence} of producer id {producer.producer_id} was used for a {SendKind(used_for[0]).value} "
                    f"send to another topic or group, or of another kind: number each request once", sequence=sequence)
            return answer
        if verdict is Verdict.OLD_REPEAT:
            if key[0] == SendKind.HALF:
                raise DuplicateSequenceNumber(f"send sequence {sequence} was stored before and its answer is no longer kept",
                                              sequence=sequence)
            return Verdict.OLD_REPEAT
        expected = producer.sends.next_expected
        raise OutOfOrderSequence(f"send sequence {sequence} is beyond the window: the next missing one is {expected}, "
                                 f"at most {producer.sends.size} may be outstanding", expected=expected)

    def send_record(self, producer: Producer, sequence: int, items: list[PutItem], kind: SendKind = SendKind.MESSAGES) -> PutItem:
        """The record that goes last in the send's write group: the sequence number, and the sizes to read the answer back."""
        # Built inline (not through state_record): this runs on every numbered send, and Enum.value and the general
        # path showed in its profile. The same properties state_record would write.
        props = {rec.TXN_ID: producer.transactional_id, rec.TXN_OP: _SEND_OP, rec.PRODUCER_ID: str(producer.producer_id),
                 rec.EPOCH: str(producer.epoch), rec.TXN_NO: str(producer.number), rec.SEQUENCE: str(sequence),
                 rec.SEND_PATH: _SEND_PATHS[kind]}
        sizes = [record_size(i.topic.encode(), encode_properties(i.properties), i.body) for i in items]
        return PutItem(TXN_STATE_TOPIC, 0, rec.encode_sizes(sizes), props)

    def sent(self, producer: Producer, sequence: int, key: SendKey, answer: SentAnswer) -> None:
        """The send numbered ``sequence`` was stored for ``key``: a repeat of it gets ``answer``."""
        producer.sends.stored(sequence, (key, answer))

    def _read_back(self, ref: StoredRef) -> tuple[SendKey, SentAnswer]:
        """A numbered send's key and answer, read back from its messages after a restart."""
        offset = ref.record_offset - sum(ref.sizes)
        stored = []
        for size in ref.sizes:
            stored.append(self.store.read_at(offset))
            offset += size
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
            self._alone[producer_id] = Producer(transactional_id="", producer_id=producer_id, epoch=epoch,
                                                owner=props.get(rec.OWNER), sends=self.window(), last_used_ms=record.store_timestamp)
            return
        producer = self._alone.get(producer_id)
        if producer is not None and kind == TxnRecord.SEND and epoch == producer.epoch:
            self.replay_send(producer, record)
            producer.last_used_ms = max(producer.last_used_ms, record.store_timestamp)

    @staticmethod
    def replay_send(producer: Producer, record: StoredMessage) -> None:
        """A numbered send of ``producer``'s current epoch: its number is stored, its answer read back when asked."""
        props = record.properties
        kind = SendKind.HALF if props.get(rec.SEND_PATH) == SendKind.HALF.value else SendKind.MESSAGES
        ref = StoredRef(record.commit_log_offset, rec.decode_sizes(record.body), kind)
        producer.sends.stored(int(props.get(rec.SEQUENCE, -1)), ref)
