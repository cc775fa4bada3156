"""The handles a broker signs: verified on the way back, bound to their group and topic, under the log's key."""

from __future__ import annotations

import pytest

from halfmq.broker.delivery.receipts import Receipts
from halfmq.broker.store.message_store import PutItem
from halfmq.broker.store.state_records import receipt_key_of
from halfmq.errors import InvalidReceiptHandle

KEY = b"k" * 32


def test_a_signed_handle_parses_back_to_what_it_names_with_this_runtime_s_epoch() -> None:
    receipts = Receipts(KEY)
    [h] = receipts.parse([receipts.sign("g", "T", 1, 7, 3)])
    assert (h.group, h.topic, h.queue_id, h.offset, h.nonce, h.epoch) == ("g", "T", 1, 7, 3, receipts.epoch)


def test_each_runtime_has_its_own_epoch() -> None:
    assert Receipts(KEY).epoch != Receipts(KEY).epoch


def test_a_handle_of_another_group_or_topic_is_refused() -> None:
    receipts = Receipts(KEY)
    handle = receipts.sign("g", "T", 0, 0, 1)
    assert receipts.resolve("g", "T", [handle])[0][0] == handle
    with pytest.raises(InvalidReceiptHandle):
        receipts.resolve("other", "T", [handle])
    with pytest.raises(InvalidReceiptHandle):
        receipts.resolve("g", "U", [handle])


def test_a_handle_signed_under_another_key_is_refused() -> None:
    handle = Receipts(b"x" * 32).sign("g", "T", 0, 0, 1)
    with pytest.raises(InvalidReceiptHandle):
        Receipts(KEY).parse([handle])


def test_the_key_the_log_names_replaces_the_data_dir_s() -> None:
    leader, follower = Receipts(KEY), Receipts(b"f" * 32)
    follower.use_logged_key(KEY)
    assert follower.key_in_log
    assert follower.parse([leader.sign("g", "T", 0, 0, 1)])[0].offset == 0


def test_logging_the_key_puts_one_record_naming_it() -> None:
    receipts = Receipts(KEY)
    put: list[list[PutItem]] = []
    receipts.log_key(put.append)
    [[record]] = put
    assert receipt_key_of(record.body) == KEY
    assert receipts.key_in_log
