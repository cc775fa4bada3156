"""What one message may hold is bounded before work grows with it: keys counted, keys and properties in bytes."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from halfmq.broker.messages.rules import MessageLimits
from halfmq.broker.messages.send_service import SendService, TopicPolicy, TopicService
from halfmq.broker.store.indexed_keys import raw_keys, record_keys
from halfmq.broker.store.message_store import MessageStore, StoreConfig
from halfmq.broker.store.record import encode_properties
from halfmq.errors import InvalidQueueId, InvalidRequest, MessageTooLarge, PropertiesTooLarge, TooManyKeys
from halfmq.wire import OutgoingMessage

POLICY = TopicPolicy(limits=MessageLimits(max_message_size=4096, max_keys_per_message=8, max_properties_bytes=512))


@pytest.fixture
def sender(tmp_path: Path):
    store = MessageStore(StoreConfig(data_dir=tmp_path, checkpoint_interval=60))
    yield SendService(store, TopicService(store, POLICY))
    store.close()


def test_a_message_with_as_many_keys_as_allowed_is_stored_and_found_by_each(sender: SendService) -> None:
    keys = [f"k{i}" for i in range(8)]
    results, _ = sender.send("ORDERS", [OutgoingMessage(body="x", keys=keys)])
    assert sender.store.keys.query("ORDERS", "k7")[0].commit_log_offset == results[0].commit_log_offset


@pytest.mark.parametrize("keys", [[f"k{i}" for i in range(9)], " ".join(f"k{i}" for i in range(9)), ["a b c d e", "f g h i"]])
def test_one_key_more_than_allowed_is_refused_and_nothing_is_stored(sender: SendService, keys: list[str] | str) -> None:
    with pytest.raises(TooManyKeys) as refused:
        sender.send("ORDERS", [OutgoingMessage(body="x", keys=keys)])
    assert refused.value.status == 400 and refused.value.extra == {"limit": 8}
    assert sender.store.topic("ORDERS") is None


def test_repeated_keys_count_once(sender: SendService) -> None:
    results, _ = sender.send("ORDERS", [OutgoingMessage(body="x", keys=["same"] * 40)])
    assert results[0].properties["KEYS"].count("same") == 40  # stored as sent, indexed once
    assert [r.commit_log_offset for r in sender.store.keys.query("ORDERS", "same")] == [results[0].commit_log_offset]


def test_keys_over_the_properties_bytes_are_refused_before_they_are_split(sender: SendService) -> None:
    with pytest.raises(PropertiesTooLarge):
        sender.send("ORDERS", [OutgoingMessage(body="x", keys=" " * 600)])


def test_properties_are_counted_in_utf8_bytes_not_characters(sender: SendService) -> None:
    emoji = "\N{GRINNING FACE}" * 130  # 130 characters, 520 bytes
    with pytest.raises(PropertiesTooLarge) as refused:
        sender.send("ORDERS", [OutgoingMessage(body="x", properties={"note": emoji})])
    assert refused.value.code == "PROPERTIES_TOO_LARGE" and refused.value.status == 413


def test_the_message_size_is_counted_in_bytes(sender: SendService) -> None:
    body = "\N{GRINNING FACE}" * 1100  # 1,100 characters, 4,400 bytes: over 4,096
    with pytest.raises(MessageTooLarge):
        sender.send("ORDERS", [OutgoingMessage(body=body)])


def test_a_property_that_is_not_utf8_text_is_a_bad_request(sender: SendService) -> None:
    with pytest.raises(InvalidRequest):
        sender.send("ORDERS", [OutgoingMessage(body="x", properties={"note": "\ud800"})])


def test_the_keys_of_a_record_are_found_in_time_linear_in_their_number() -> None:
    """The record a many-keys message left (before the cap, or read back at recovery): 80k keys indexed once each."""
    props = {"UNIQ_KEY": "id", "KEYS": " ".join(f"key-{i}" for i in range(80_000))}
    started = time.process_time()
    assert len(record_keys(props)) == len(raw_keys(encode_properties(props))) == 80_001
    assert time.process_time() - started < 5  # a list's `not in` took ~40 s here; a set takes ~0.05 s


def test_a_plain_message_naming_its_queue_is_stored_there_and_a_queue_past_the_topic_s_is_refused(sender: SendService) -> None:
    """The batch path takes a message naming its queue (a Kafka record's partition) as ``prepare`` does."""
    sender.topics.create("ORDERS", 4)
    cfg = sender.topics.get("ORDERS")
    assert [item.queue_id for item in sender.prepare_many(cfg, [OutgoingMessage(body="x", queue_id=q) for q in (3, 1, 3)])] == [3, 1, 3]
    [batched] = sender.prepare_many(cfg, [OutgoingMessage(body="x", queue_id=2)])
    one = sender.prepare(cfg, OutgoingMessage(body="x", queue_id=2))
    assert (batched.queue_id, batched.body, list(batched.properties)) == (one.queue_id, one.body, list(one.properties))
    results, _ = sender.send("ORDERS", [OutgoingMessage(body="x", queue_id=2), OutgoingMessage(body="y", queue_id=2)])
    assert [(r.queue_id, r.queue_offset) for r in results] == [(2, 0), (2, 1)]
    with pytest.raises(InvalidQueueId):
        sender.send("ORDERS", [OutgoingMessage(body="x", queue_id=1), OutgoingMessage(body="x", queue_id=4)])
    assert sender.store.visible.queue_range("ORDERS", 1) == (0, 0)  # nothing of the refused batch is stored
