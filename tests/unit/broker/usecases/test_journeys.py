"""Where is my message, the use case: which topics a lookup reads, how it shares its reads among them, and what it
answers for an id on several topics; on a real store with small index files and an access that names who may look up what."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from halfmq.broker.security.access import ANONYMOUS, Access
from halfmq.broker.security.policy import Action, Principal, Resource
from halfmq.broker.store.message_store import MessageStore, PutItem, StoreConfig
from halfmq.broker.usecases.journeys import Journeys
from halfmq.errors import AmbiguousMessageId, MessageNotFound, TopicRequired

HALF, OP = "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC"
NO_SCOPE: Any = {}
_numbers = itertools.count()


class TopicsAccess:
    """May look up: the topics listed for the principal's name ("*": every one)."""

    def __init__(self, **topics: set[str]) -> None:
        self.topics = topics

    def allows(self, principal: Principal, action: Action, resource: Resource) -> bool:
        assert action is Action.DESCRIBE
        named = self.topics.get(principal.name, set())
        return "*" in named or resource.name in named


def opened(path: Path, **config) -> Iterator[MessageStore]:
    s = MessageStore(StoreConfig(path, index_slots=256, index_entries=1024, **config))
    for topic in ("ORDERS", "MALLORY", "OTHER"):
        s.create_topic(topic, 1)
    yield s
    s.close()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MessageStore]:
    yield from opened(tmp_path)


@pytest.fixture
def unfiltered_store(tmp_path: Path) -> Iterator[MessageStore]:
    """Without the key-index files' filters: every file in range is walked (and counted against the bound)."""
    yield from opened(tmp_path, index_filter_bits=0)


def runtime(store: MessageStore, lookup_topics: int = 1000, lookup_index_files: int = 64) -> Journeys:
    access = TopicsAccess(admin={"*"}, credit={"ORDERS"}, mallory={"MALLORY"})
    return Journeys(access, store, asyncio.Semaphore(2), lookup_topics, lookup_index_files)  # type: ignore[arg-type]


ADMIN = Access(None).cluster_admin(ANONYMOUS, {})  # the console's session


def put(store: MessageStore, topic: str, count: int = 1, **props: str) -> list[str]:
    """``count`` messages on ``topic``, each with an id of its own unless ``props`` give one; their ids."""
    results, _ = store.put([PutItem(topic, 0, b"x", {"UNIQ_KEY": f"{topic}-{next(_numbers)}", **props}) for _ in range(count)])
    return [r.properties["UNIQ_KEY"] for r in results]


async def found(rt: Any, who: str, key: str, limit: int = 50, topic: str | None = None) -> list[str]:
    answer = await rt.find(Principal(who), NO_SCOPE, key, 0, limit, topic)
    return [m.msg_id for m in answer.messages]


async def test_300_messages_on_one_topic_leave_every_other_topic_its_share_of_a_search(store: MessageStore) -> None:
    [victim] = put(store, "ORDERS", KEYS="order-9")
    put(store, "MALLORY", 300, KEYS="order-9")  # newer, all of them
    rt = runtime(store)
    assert await found(rt, "credit", "order-9") == [victim]
    listed = await found(rt, "admin", "order-9")
    assert len(listed) == 50 and listed[-1] == victim
    assert victim not in await found(rt, "mallory", "order-9", limit=256)


async def test_a_lookup_that_names_no_topic_reads_at_most_lookup_topics_and_one_that_names_its_topic_is_answered(
        store: MessageStore) -> None:
    [sent] = put(store, "ORDERS", KEYS="k")
    rt = runtime(store, lookup_topics=2)
    with pytest.raises(TopicRequired) as refused:
        await found(rt, "admin", "k")
    assert refused.value.status == 400 and refused.value.extra == {"limit": 2}
    assert await found(rt, "admin", "k", topic="ORDERS") == [sent]
    assert await found(rt, "credit", "k") == [sent]  # one topic it may look up: within the bound
    assert (await rt.show(Principal("admin"), NO_SCOPE, sent, "ORDERS")).message.topic == "ORDERS"


async def test_a_named_topic_the_principal_may_not_look_up_or_that_is_not_there_finds_nothing(store: MessageStore) -> None:
    [sent] = put(store, "ORDERS", KEYS="k")
    rt = runtime(store)
    assert await found(rt, "mallory", "k", topic="ORDERS") == []
    assert await found(rt, "admin", "k", topic="NO_SUCH_TOPIC") == []
    assert await found(rt, "admin", "k", topic=HALF) == []  # system topics hold no message's keys of their own
    with pytest.raises(MessageNotFound):
        await rt.show(Principal("mallory"), NO_SCOPE, sent, "ORDERS")


async def test_a_lookup_walks_at_most_lookup_index_files_files_in_each_topic(unfiltered_store: MessageStore) -> None:
    store = unfiltered_store
    [old] = put(store, "ORDERS", KEYS="k")
    put(store, "OTHER", 3000)  # ~3 files of 1,024 entries each after it
    rt = runtime(store, lookup_index_files=2)
    assert await found(rt, "admin", "k") == []
    with pytest.raises(MessageNotFound):
        await rt.show(Principal("admin"), NO_SCOPE, old)
    assert await found(runtime(store), "admin", "k") == [old]


async def test_files_whose_filter_rules_the_key_out_do_not_count_against_lookup_index_files(store: MessageStore) -> None:
    [old] = put(store, "ORDERS", KEYS="k")
    put(store, "OTHER", 3000)  # ~3 files of 1,024 entries each after it, none holding the key
    store.checkpoint()  # the sealed files' filters
    assert await found(runtime(store, lookup_index_files=3), "admin", "k") == [old]  # walked newest first, 4 files without filters


async def test_an_id_on_two_topics_is_ambiguous_for_who_may_look_up_both_and_one_message_for_who_may_look_up_one(
        store: MessageStore) -> None:
    put(store, "ORDERS", UNIQ_KEY="same-id", KEYS="mine")
    put(store, "MALLORY", UNIQ_KEY="same-id")
    rt = runtime(store)
    with pytest.raises(AmbiguousMessageId) as ambiguous:
        await rt.show(Principal("admin"), NO_SCOPE, "same-id")
    assert ambiguous.value.status == 409 and ambiguous.value.extra == {"topics": ["MALLORY", "ORDERS"]}
    assert (await rt.show(Principal("admin"), NO_SCOPE, "same-id", "ORDERS")).message.keys == ["mine"]
    assert (await rt.show(Principal("credit"), NO_SCOPE, "same-id")).message.topic == "ORDERS"
    assert (await rt.show(Principal("mallory"), NO_SCOPE, "same-id")).message.topic == "MALLORY"
    console = await rt.console_search(ADMIN, "same-id")
    assert console["journey"] is None and {m["topic"] for m in console["found"]["messages"]} == {"MALLORY", "ORDERS"}
    assert (await rt.console_search(ADMIN, "same-id", "ORDERS"))["journey"]["message"]["topic"] == "ORDERS"


async def test_a_message_whose_keys_spell_another_s_id_lends_it_neither_its_place_nor_its_transaction(store: MessageStore) -> None:
    [victim] = put(store, "ORDERS")
    store.put([PutItem(HALF, 0, b"h", {"UNIQ_KEY": "other", "KEYS": victim, "REAL_TOPIC": "ORDERS", "REAL_QID": "0",
                                       "TRANSACTION_ID": "tx-9"}),
               PutItem(OP, 0, b"0", {"TRANSACTION_ID": "tx-9", "OP": "rollback"})])
    journey = await runtime(store).show(Principal("credit"), NO_SCOPE, victim)
    assert [e.kind.value for e in journey.events] == ["sent"] and journey.message.transaction_id is None
