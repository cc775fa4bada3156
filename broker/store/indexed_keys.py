"""What the key index finds a record by, and in which scope (store/key_index.py keeps the entries).

One rule: a record's ``UNIQ_KEY``, each of its ``KEYS`` (space-separated) and each of its ``INDEX_KEYS`` (a property the
domain sets; the store never parses bodies), in the scope of the record's home topic (its ``REAL_TOPIC`` for a half, a
timer's copy or a dead letter, set by the broker only); its ``TRANSACTION_ID`` (a reserved property: only the broker
writes it) in the transactions' scope, one for all topics. Keys and ids were one namespace: 300 messages sent with
another principal's key hid that principal's message from every search, and ids sent first in one topic took over the
journey of a message in another (issue 42). A topic's own publishers share its scope.
"""

from __future__ import annotations

from .topics import REAL_TOPIC  # the message's own topic on a half, a timer's copy, a dead letter (reserved)

UNIQ_KEY = "UNIQ_KEY"
KEYS = "KEYS"
INDEX_KEYS = "INDEX_KEYS"
TRANSACTION_ID = "TRANSACTION_ID"  # RocketMQ's, on a half, its final, its ops and markers: indexed in TXN_SCOPE
KEY_SEPARATOR = " "
TXN_SCOPE = "\x00transactions"  # the scope of transaction ids (no topic name holds a NUL): one for all topics


def position_key(topic: str, queue_id: int, offset: int) -> str:
    """The key of a message's place, as the records about it (journal lines, acks) index it: ``topic/queue@offset``."""
    return f"{topic}/{queue_id}@{offset}"


def record_keys(props: dict[str, str]) -> list[str]:
    """The keys a record is found by in its topic's scope: its UNIQ_KEY, each of its KEYS and INDEX_KEYS (no duplicates).

    Linear in the properties' size (a dict keeps the order and drops repeats): a list's ``not in`` made a message of
    80k keys cost the broker 42 s under the store's write lock (issue 42); sends are also capped at
    ``max_keys_per_message``, but records written before that cap are indexed here at start."""
    uniq = props.get(UNIQ_KEY)
    if uniq and len(props) == 1:  # the common message: only its UNIQ_KEY
        return [uniq]
    keys: dict[str, None] = {uniq: None} if uniq else {}
    for name in (KEYS, INDEX_KEYS):
        more = props.get(name)
        if more:
            keys.update(dict.fromkeys(more.split(KEY_SEPARATOR)))
    keys.pop("", None)
    return list(keys)


def index_keys(topic: str, props: dict[str, str]) -> list[tuple[str, str]]:
    """``(scope, key)``: what a record of ``topic`` is indexed by, each once: its keys in its home topic's scope, its
    transaction id in the transactions' scope."""
    home = props.get(REAL_TOPIC) or topic
    found = [(home, key) for key in record_keys(props)]
    txid = props.get(TRANSACTION_ID)
    if txid:
        found.append((TXN_SCOPE, txid))
    return found


def raw_keys(props: bytes) -> list[str]:
    """``record_keys`` of encoded properties (``name \\x01 value \\x02`` …), found without decoding them all."""
    if not props:
        return []
    keys: dict[str, None] = {}
    for name in (b"UNIQ_KEY", b"KEYS", b"INDEX_KEYS"):
        value = _raw_value(props, name)
        if value:
            keys.update(dict.fromkeys(value.decode().split(KEY_SEPARATOR)))
    keys.pop("", None)
    return list(keys)


def raw_index_keys(topic: str, props: bytes) -> list[tuple[str, str]]:
    """``index_keys`` of encoded properties (a follower's replicated records)."""
    real = _raw_value(props, b"REAL_TOPIC") if props else None
    home = real.decode() if real else topic
    found = [(home, key) for key in raw_keys(props)]
    txid = _raw_value(props, b"TRANSACTION_ID") if props else None
    if txid:
        found.append((TXN_SCOPE, txid.decode()))
    return found


def _raw_value(props: bytes, name: bytes) -> bytes | None:
    marker = b"\x02" + name + b"\x01"
    found = props.rfind(marker)  # the last one, as a dict keeps
    if found >= 0:
        begin = found + len(marker)
    elif props.startswith(name + b"\x01"):
        begin = len(name) + 1
    else:
        return None
    end = props.find(b"\x02", begin)
    return props[begin:] if end < 0 else props[begin:end]
