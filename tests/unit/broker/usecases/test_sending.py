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
from halfmq.broker.idempotence.producer_ids import SentMessage
from halfmq.broker.idempotence.send_window import Verdict
from halfmq.broker.observability.metrics import create_metrics
from halfmq.broker.runtime import BrokerRuntime
from halfmq.broker.security.access import ANONYMOUS, Access
from halfmq.broker.timers.recall import RecallOutcome
from halfmq.broker.usecases.sending import Sending
from halfmq.errors import InvalidRequest
from halfmq.wire import OutgoingMessage, SendRequest
from tests.support.grants import publishing
from tests.unit.broker.usecases.fakes import SCOPE as FAKE_SCOPE
from tests.unit.broker.usecases.fakes import FakeLog, FakeSender, FakeTopics, FakeWindows, RecordingDurable

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
    ids = await rt.usecases.producer_transactions.new_producer_id(ANONYMOUS, SCOPE)
    for sequence in range(SENDS):
        await rt.usecases.sending.send(publishing(rt, "ORDERS", who), batch(ids, sequence))
    window = rt.producer_ids.sender(ids.producer_id, ids.epoch, who.name).sends
    assert len(window.answers) == SENDS
    assert retained_bytes(window) < SENDS * BYTES_PER_NUMBER
    assert rt.producer_ids.holdings(who.name).sequences == SENDS


async def test_a_repeat_of_a_1000_message_send_gets_its_first_answer_read_back_even_after_a_restart(tmp_path: Path) -> None:
    rt = open_runtime(tmp_path)
    who = rt.access.principal(SCOPE)
    ids = await rt.usecases.producer_transactions.new_producer_id(ANONYMOUS, SCOPE)
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


# --- Sending built from fakes -------------------------------------------------------------------------------------


class FakeRecalls:
    """Recalls every handle as message ``m1``, its marker ending the log at 9100; records what it was asked."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []

    def recall(self, topic: str, text: str) -> RecallOutcome:
        self.asked.append((topic, text))
        return RecallOutcome("m1", topic, 1_800_000_060_000, False, 9100)


def sending(windows: FakeWindows, recalls: FakeRecalls | None = None) -> tuple[Sending, FakeLog, RecordingDurable]:
    log, durable = FakeLog(end=9000), RecordingDurable()
    use_case = Sending(Access(None), FakeTopics(), FakeSender(log), windows, durable, log, create_metrics(), recalls or FakeRecalls())
    return use_case, log, durable


async def test_a_recall_of_the_publishers_topic_answers_once_its_marker_is_durable() -> None:
    recalls = FakeRecalls()
    use_case, _, durable = sending(FakeWindows(), recalls)
    answer = await use_case.recall(Access(None).publisher(ANONYMOUS, FAKE_SCOPE, "ORDERS"), "handle-1")
    assert recalls.asked == [("ORDERS", "handle-1")]
    assert durable.waited == [9100]
    assert to_builtins(answer) == {"msg_id": "m1", "topic": "ORDERS", "deliver_at_ms": 1_800_000_060_000}


def numbered(sequence: int | None = 7, producer_id: int | None = 3, epoch: int | None = 0) -> SendRequest:
    return SendRequest(messages=[OutgoingMessage(body="a"), OutgoingMessage(body="b")],
                       producer_id=producer_id, epoch=epoch, sequence=sequence)


async def test_a_numbered_send_writes_its_messages_and_its_number_as_one_group_and_waits_for_it() -> None:
    windows = FakeWindows()
    use_case, log, durable = sending(windows)
    answer = await use_case.send(Access(None).publisher(ANONYMOUS, FAKE_SCOPE, "ORDERS"), numbered())
    assert [len(group) for group in log.groups] == [3]  # two messages and the send record, together
    assert windows.records == [(7, 2)]
    assert [(sequence, ref.records) for sequence, ref in windows.noted] == [(7, 2)]
    assert durable.waited == [log.end]
    assert [r.msg_id for r in answer.results] == ["id-a", "id-b"] and not answer.duplicate


async def test_a_numbered_send_repeated_inside_the_window_answers_its_first_answer_and_writes_nothing() -> None:
    first = [SentMessage("id-a", "ORDERS", 1, 10, 500, None), SentMessage("id-b", "ORDERS", 1, 11, 600, None)]
    windows = FakeWindows(earlier=first)
    use_case, log, durable = sending(windows)
    answer = await use_case.send(Access(None).publisher(ANONYMOUS, FAKE_SCOPE, "ORDERS"), numbered())
    assert answer.duplicate
    assert [(r.msg_id, r.queue_offset, r.commit_log_offset) for r in answer.results] == [("id-a", 10, 500), ("id-b", 11, 600)]
    assert log.groups == [] and windows.records == [] and windows.noted == []
    assert durable.waited == [9000]  # the first attempt may still be waiting for its fsync


async def test_a_numbered_send_the_window_forgot_is_answered_as_stored_without_offsets_and_writes_nothing() -> None:
    use_case, log, _ = sending(FakeWindows(earlier=Verdict.OLD_REPEAT))
    answer = await use_case.send(Access(None).publisher(ANONYMOUS, FAKE_SCOPE, "ORDERS"), numbered())
    assert answer.duplicate and [r.queue_offset for r in answer.results] == [-1, -1]
    assert log.groups == []


async def test_a_send_with_only_part_of_its_numbering_is_refused_before_anything_is_written() -> None:
    windows = FakeWindows()
    use_case, log, durable = sending(windows)
    with pytest.raises(InvalidRequest):
        await use_case.send(Access(None).publisher(ANONYMOUS, FAKE_SCOPE, "ORDERS"), numbered(sequence=None))
    assert log.groups == [] and windows.asked == [] and durable.waited == []


async def test_a_plain_send_asks_no_window() -> None:
    windows = FakeWindows()
    use_case, log, _ = sending(windows)
    await use_case.send(Access(None).publisher(ANONYMOUS, FAKE_SCOPE, "ORDERS"), numbered(None, None, None))
    assert [len(group) for group in log.groups] == [2] and windows.asked == [] and windows.records == []
