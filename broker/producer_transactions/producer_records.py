"""What producer transactions write into HALFMQ_TXN_STATE: property names, record kinds, the acks' encoding.

They are on disk, so a restart reads back exactly what an older broker wrote:
rename nothing here.
"""

from __future__ import annotations

import json
from enum import Enum

TXN_ID = "TXN_ID"
TXN_OP = "TXN_OP"
PRODUCER_ID = "PRODUCER_ID"
EPOCH = "EPOCH"
TXN_NO = "TXN_NO"  # the transaction's number within its transactional id
TIMEOUT_MS = "TIMEOUT_MS"
MESSAGES = "TXN_MESSAGES"
ABORTED_BY = "ABORTED_BY"
SEQUENCE = "SEQUENCE"
SEND_PATH = "SEND_PATH"  # which send a SEND record numbers: SEND_MESSAGES (plain or batch) or SEND_HALF
OWNER = "OWNER"  # on an init record: the principal that obtained the producer id (absent before ids were bound)

SEND_MESSAGES = "messages"
SEND_HALF = "half"


class TxnRecord(str, Enum):
    INIT = "init"
    BEGIN = "begin"
    COMMIT = "commit"  # written last in the write group that holds every message of the transaction
    ABORT = "abort"
    SEND = "send"  # an idempotent plain send's sequence number, last in the send's own write group


class AbortedBy(str, Enum):
    PRODUCER = "producer"
    TIMEOUT = "timeout"
    RECOVERY = "recovery"  # open when the broker stopped: aborted on the next start
    OPERATOR = "operator"
    NEW_EPOCH = "init"  # a new instance of the producer initialised the same transactional id


AckRef = tuple[str, str, int, int]  # group, topic, queue id, queue offset


def encode_acks(acks: list[AckRef]) -> bytes:
    return json.dumps(acks, separators=(",", ":")).encode()


def decode_acks(body: bytes) -> list[AckRef]:
    if not body:
        return []
    return [(str(g), str(t), int(q), int(o)) for g, t, q, o in json.loads(body)]


def encode_sizes(sizes: list[int]) -> bytes:
    """The record sizes of an idempotent send's messages: enough to read its answer back after a restart.

    The JSON list json.dumps would write, built by hand: json.dumps with separators builds an encoder per
    call, a tenth of a numbered send's broker time.
    """
    return f"[{','.join(map(str, sizes))}]".encode()


def decode_sizes(body: bytes) -> list[int]:
    return [int(n) for n in json.loads(body)] if body else []
