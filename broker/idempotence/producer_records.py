"""What producers write into HALFMQ_TXN_STATE: property names, record kinds, the send sizes' encoding.

One log holds both protocols of a producer id: its ``init`` and the numbered ``send`` records of the
idempotent producer (this package), and the ``begin`` / ``commit`` / ``abort`` of Kafka-style
transactions (``producer_transactions``, whose own values are in its ``txn_records``). The names are
here, below both, so each package writes the same layout without importing the other.

They are on disk, so a restart reads back exactly what an older broker wrote: rename nothing here.
"""

from __future__ import annotations

import json
from enum import Enum

from halfmq.broker.store.state_records import TXN_OP as TXN_OP  # the broker's own state records name their kind with it too

TXN_ID = "TXN_ID"
PRODUCER_ID = "PRODUCER_ID"
EPOCH = "EPOCH"
TXN_NO = "TXN_NO"  # the transaction's number within its transactional id
TIMEOUT_MS = "TIMEOUT_MS"
MESSAGES = "TXN_MESSAGES"
ABORTED_BY = "ABORTED_BY"
OFFSETS = "TXN_OFFSETS"  # on a commit record: the consumed offsets it commits (group, topic, queue, offset rows)
SEQUENCE = "SEQUENCE"
SEND_PATH = "SEND_PATH"  # which send a SEND record numbers: a SendKind
OWNER = "OWNER"  # on an init record: the principal that obtained the producer id (absent before ids were bound)


class SendKind(str, Enum):
    """Which request a numbered send was: its value is the SEND_PATH property of its SEND record."""

    MESSAGES = "messages"  # a plain send (one message or a batch) to a topic
    HALF = "half"  # a half message (RocketMQ's transactional send)



class TxnRecord(str, Enum):
    INIT = "init"
    BEGIN = "begin"
    COMMIT = "commit"  # written last in the write group that holds every message of the transaction
    ABORT = "abort"
    SEND = "send"  # an idempotent plain send's sequence number, last in the send's own write group


def encode_sizes(sizes: list[int]) -> bytes:
    """The record sizes of an idempotent send's messages: enough to read its answer back after a restart.

    The JSON list json.dumps would write, built by hand: json.dumps with separators builds an encoder per
    call, a tenth of a numbered send's broker time.
    """
    return f"[{','.join(map(str, sizes))}]".encode()


def decode_sizes(body: bytes) -> list[int]:
    return [int(n) for n in json.loads(body)] if body else []
