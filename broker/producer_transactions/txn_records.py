"""What Kafka-style transactions write into HALFMQ_TXN_STATE beyond the producer's records: who aborted, the acks (their
rows are the same as an ack request's record: ``store.state_records``).

The property names and record kinds are shared with the idempotent producer (``idempotence.producer_records``).
They are on disk, so a restart reads back exactly what an older broker wrote: rename nothing here.
"""

from __future__ import annotations

from enum import Enum

from halfmq.broker.store.state_records import AckRef, decode_acks, encode_acks

__all__ = ["AbortedBy", "AckRef", "decode_acks", "encode_acks"]


class AbortedBy(str, Enum):
    PRODUCER = "producer"
    TIMEOUT = "timeout"
    RECOVERY = "recovery"  # open when the broker stopped: aborted on the next start
    OPERATOR = "operator"
    NEW_EPOCH = "init"  # a new instance of the producer initialised the same transactional id
