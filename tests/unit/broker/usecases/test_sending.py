"""A numbered send on a real runtime: what its producer's window keeps of it, and what a repeat is answered.

Issue 42: each producer id kept the answers of its last 1,024 sends (~236 MB per id at 1,000 messages a send).
The window now keeps where a send's records are; a repeat's answer is read back from them.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import AsyncIterator
from enum import Enum
from pathlib import Path
from typing import Any

import pytest
from msgspec import to_builtins

from halfmq.broker.config import BrokerSettings
from halfmq.broker.protocol import OutgoingMessage, SendRequest
from halfmq.broker.runtime import BrokerRuntime
from tests.support.grants import publishing

SCOPE = {"type": "http", "path": "/v1/topics/ORDERS/messages", "headers": []}
MESSAGES = 1000  # the batch limit (wire.MAX_BATCH)
SENDS = 16
BYTES_PER_NUMBER = 512  # a SentRef is about 200 bytes with its dict slot; an answer of 1,000 messages was ~236 kB


def retained_bytes(root: Any) -> int:
    """Bytes of every object reachable from ``root`` (types and enum members are shared, not counted)."""
    seen: set[int] = set()
    stack, total = [root], 0
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, (type, Enum)):
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        stack.extend(gc.get_referents(obj))
    return total


def open_runtime(path: Path) -> BrokerRuntime:
    return BrokerRuntime.open(BrokerSettings(data_dir=path, grpc_port=0))


@pytest.fixture
async def rt(tmp_path: Path) -> AsyncIterator[BrokerRuntime]:
    runtime = open_runtime(tmp_path)
    try:
        yield runtime
    finally:
        runtime.store.close()


def batch(ids: Any, sequence: int) -> SendRequest:
    return SendRequest(messages=[OutgoingMessage(body=f"{sequence}/{i}") for i in range(MESSAGES)],
                       producer_id=ids.producer_id, epoch=ids.epoch, sequence=sequence)


async def test_a_producer_window_keeps_a_few_hundred_bytes_per_send_of_1000_messages(rt: BrokerRuntime) -> None:
    who = rt.access.principal(SCOPE)
    ids = await rt.usecases.producer_transactions.new_producer_id(SCOPE)
    for sequence in range(SENDS):
        await rt.usecases.sending.send(publishing(rt, "ORDERS", who), batch(ids, sequence))
    window = rt.producer_ids.sender(ids.producer_id, ids.epoch, who.name).sends
    assert len(window.answers) == SENDS
    assert retained_bytes(window) < SENDS * BYTES_PER_NUMBER
    assert rt.producer_ids.holdings(who.name).sequences == SENDS


async def test_a_repeat_of_a_1000_message_send_gets_its_first_answer_read_back_even_after_a_restart(tmp_path: Path) -> None:
    rt = open_runtime(tmp_path)
    who = rt.access.principal(SCOPE)
    ids = await rt.usecases.producer_transactions.new_producer_id(SCOPE)
    first = [to_builtins(await rt.usecases.sending.send(publishing(rt, "ORDERS", who), batch(ids, n))) for n in range(3)]
    assert {len(answer["results"]) for answer in first} == {MESSAGES}
    again = to_builtins(await rt.usecases.sending.send(publishing(rt, "ORDERS", who), batch(ids, 1)))
    assert again == {**first[1], "duplicate": True}
    rt.store.close()
    rt = open_runtime(tmp_path)
    try:
        for n in range(3):
            assert to_builtins(await rt.usecases.sending.send(publishing(rt, "ORDERS", who), batch(ids, n))) == {**first[n], "duplicate": True}
        assert rt.store.reads.queue_range("ORDERS", 0)[1] + sum(rt.store.reads.queue_range("ORDERS", q)[1] for q in range(1, 4)) == 3 * MESSAGES
    finally:
        rt.store.close()
