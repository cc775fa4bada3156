"""What Kafka-style transactions write into HALFMQ_TXN_STATE beyond the producer's records: who aborted, the acks.

The property names and record kinds are shared with the idempotent producer (``idempotence.producer_records``).
They are on disk, so a restart reads back exactly what an older broker wrote: rename nothing here.
"""

from __future__ import annotations

import json
from enum import Enum


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
