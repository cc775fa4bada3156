"""Names an attacker chose (issue 30, item 4): what a name must never be, for the validator, the API and the console."""

from __future__ import annotations

from pathlib import Path


def steering_name(victim_transaction_id: str) -> str:
    """A name that, pasted raw into ``/console/transactional-ids/{name}/abort``, makes Chromium post the victim's rollback.

    Chromium turns ``\\`` into ``/``, resolves ``..`` and drops ``#…``: the button posts
    ``/console/transactions/<victim>/rollback``.
    """
    return f"..\\transactions\\{victim_transaction_id}\\rollback#"


CRAFTED = {
    "markup": "<img src=x onerror=alert(1)>",
    "space": "order copier",
    "right-to-left override": "copier\u202egpj.exe",
    "percent-encoded NUL": "copier%00",
    "NUL": "copier\x00",
    "newline": "copier\n",
    "5,000 characters": "x" * 5000,
    "dot segment": "..",
    "query and fragment": "copier?x=1#y",
    "full-width digits": "copier\uff11",
    "steering": steering_name("C0A8000100002A9F0000000000000000"),
    "empty": "",
}


def write_stored_init(data_dir: Path, transactional_id: str, producer_id: int, segment_bytes: int) -> None:
    """An ``init`` record for ``transactional_id`` written straight into a stopped broker's store, below the name rule:
    what a broker older than the rule left on disk. The next start replays it like any other."""
    write_stored_inits(data_dir, {transactional_id: producer_id}, segment_bytes)


def write_stored_inits(data_dir: Path, producer_ids: dict[str, int], segment_bytes: int) -> None:
    from halfmq.broker.idempotence import producer_records as rec
    from halfmq.broker.store.message_store import MessageStore, PutItem, StoreConfig
    from halfmq.broker.store.topics import TXN_STATE_TOPIC

    store = MessageStore(StoreConfig(data_dir, segment_bytes=segment_bytes))
    try:
        store.create_topic(TXN_STATE_TOPIC, 1)
        store.put([PutItem(TXN_STATE_TOPIC, 0, b"", {rec.TXN_ID: tid, rec.TXN_OP: rec.TxnRecord.INIT.value,
                                                     rec.PRODUCER_ID: str(producer_id), rec.EPOCH: "0", rec.TXN_NO: "0",
                                                     rec.TIMEOUT_MS: "600000"})
                   for tid, producer_id in producer_ids.items()])
    finally:
        store.close()
