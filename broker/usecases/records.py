"""What a front that maps messages into another protocol (the RocketMQ 5 gRPC front) may know of a stored one.

The stored message's type and the broker's own property names (a FIFO message's group, a timed message's due
time and recall handle), and a half message as its producer sent it.
"""

from __future__ import annotations

from dataclasses import replace

from halfmq.broker.delivery.fifo_gate import MESSAGE_GROUP
from halfmq.broker.half_messages import record_names as tx_names
from halfmq.broker.store.damaged_records import DamagedEntry
from halfmq.broker.store.record import StoredMessage
from halfmq.broker.store.topics import TIMER_OUT_MS
from halfmq.broker.timers.recall import handle_of as recall_handle_of

__all__ = ["BROKER_PROPERTIES", "MESSAGE_GROUP", "DamagedEntry", "SYSTEM_PROPERTIES", "TIMER_OUT_MS", "StoredMessage", "as_sent", "is_transactional",
           "recall_handle_of"]

# Properties a half message carries for the broker's bookkeeping (besides UNIQ_KEY, KEYS and TAGS).
BROKER_PROPERTIES = frozenset({tx_names.TRAN_MSG, tx_names.REAL_TOPIC, tx_names.REAL_QID, tx_names.PRODUCER_GROUP,
                               tx_names.CHECK_TIMES, tx_names.TRANSACTION_ID})

# Properties the fronts that map messages carry outside a message's user properties, or that are the broker's own.
SYSTEM_PROPERTIES = frozenset({"UNIQ_KEY", "KEYS", "TAGS", MESSAGE_GROUP, TIMER_OUT_MS, *BROKER_PROPERTIES})


def is_transactional(properties: dict[str, str]) -> bool:
    """Whether the message was sent as part of a transaction (a half, or the message its commit delivered)."""
    return properties.get(tx_names.TRAN_MSG) == "true"


def as_sent(half: StoredMessage) -> StoredMessage:
    """A half message with its real topic back, as a check-back shows it to its producer."""
    return replace(half, topic=half.properties.get(tx_names.REAL_TOPIC, half.topic))
