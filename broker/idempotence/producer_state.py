"""A producer id and epoch, as every numbered request names it: who obtained it, which epoch is current, its sends.

A producer id is random (63 bits, never guessed) and bound to the principal that obtained it (the owner is on
its init record, so the binding survives a restart). A transactional id's producer (``producer_transactions``)
is one of these with a transaction on top; a producer id obtained alone (POST /v1/producer-ids) has no
transactional id. The checks here are the ones both kinds share: the epoch is current, the owner is the caller.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NoReturn

from halfmq.broker.store.message_store import PutItem
from halfmq.broker.store.topics import TXN_STATE_TOPIC
from halfmq.errors import InvalidProducerEpoch, ProducerFenced, ProducerIdNotOwned, UnknownProducerId

from . import producer_records as rec
from .send_window import SendWindow


@dataclass(kw_only=True)
class ProducerState:
    """One producer id at its current epoch, and the window of its numbered sends under that epoch."""

    transactional_id: str  # "" for a producer id obtained without one
    producer_id: int
    epoch: int
    owner: str | None = None  # the principal that obtained the producer id; None: obtained before ids were bound
    number: int = 0  # transactions begun under its transactional id, ever (0 without one)
    # Idempotent sends under this producer id and epoch (outside transactions): the window of stored numbers, each
    # remembered as a SentRef (where its records are: producer_ids.py), never as its answer.
    sends: SendWindow = field(default_factory=SendWindow)
    last_used_ms: int = 0  # a producer id without a transactional id expires after this much idleness


def state_record(producer: ProducerState, kind: rec.TxnRecord, *, number: int | None = None, timeout_ms: int = 0,
                 extra: dict[str, str] | None = None, body: bytes = b"") -> PutItem:
    """A record of ``producer`` in HALFMQ_TXN_STATE: its ids and epoch, then what ``kind`` adds (an init: timeout, owner)."""
    props = {rec.TXN_ID: producer.transactional_id, rec.TXN_OP: kind.value, rec.PRODUCER_ID: str(producer.producer_id),
             rec.EPOCH: str(producer.epoch), rec.TXN_NO: str(producer.number if number is None else number)}
    if kind is rec.TxnRecord.INIT:
        props[rec.TIMEOUT_MS] = str(timeout_ms)
        if producer.owner is not None:
            props[rec.OWNER] = producer.owner
    if extra:
        props.update(extra)
    return PutItem(TXN_STATE_TOPIC, 0, body, props)


def current(producer: ProducerState, producer_id: int, epoch: int) -> ProducerState:
    """``producer`` (a transactional id's) if the request names its producer id and current epoch; an older epoch is fenced."""
    tid = producer.transactional_id
    if producer_id != producer.producer_id:
        raise InvalidProducerEpoch(f"producer id {producer_id} is not {tid!r}'s ({producer.producer_id})")
    if epoch < producer.epoch:
        raise ProducerFenced(f"epoch {epoch} of {tid!r} is fenced by epoch {producer.epoch}: another instance initialised it",
                             epoch=producer.epoch)
    if epoch > producer.epoch:
        raise InvalidProducerEpoch(f"epoch {epoch} of {tid!r} was never handed out (current {producer.epoch})")
    return producer


def not_owned(producer: ProducerState, principal: str) -> NoReturn:
    """The refusal of ``principal`` acting with ``producer``'s id, which another principal (or nobody provably) obtained."""
    if producer.owner is None:  # handed out before ids were bound to principals: nobody may prove it is theirs
        raise UnknownProducerId(f"producer id {producer.producer_id} was obtained before producer ids were bound to "
                                "principals: get a new one (POST /v1/producer-ids, or init the transactional id)")
    raise ProducerIdNotOwned(f"producer id {producer.producer_id} was obtained by another principal, not {principal!r}")
