"""What consumers may read (store.visible), on a real store: everything on a single broker, up to the bound in a set."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import pytest

from halfmq.broker.delivery import dead_letters
from halfmq.broker.delivery.delivery_service import DeliveryPolicy, DeliveryService
from halfmq.broker.store.message_store import MessageStore, PutItem, StoreConfig
from halfmq.broker.store.topics import dlq_topic
from tests.support.loop_steps import run_ready

BROKER = Path(__file__).resolve().parents[4] / "broker"


@pytest.fixture
def store(tmp_path: Path):
    s = MessageStore(StoreConfig(tmp_path))
    s.create_topic("T", 2)
    yield s
    s.close()


def put(store: MessageStore, *bodies: str, qid: int = 0) -> int:
    """Put ``bodies`` as one write group; the log offset it ends at."""
    return store.put([PutItem("T", qid, b.encode()) for b in bodies])[1]


def bodies(messages) -> list[str]:
    return [m.body.decode() for m in messages]


def test_without_a_bound_everything_written_is_visible_as_on_a_single_broker(store: MessageStore) -> None:
    put(store, "a", "b")
    assert store.visible.bound is None
    assert store.visible.queue_range("T", 0) == store.reads.queue_range("T", 0) == (0, 2)
    assert bodies(store.visible.read_queue("T", 0, 0, 10)) == ["a", "b"]


def test_with_a_bound_reads_stop_at_the_last_message_that_ends_within_it(store: MessageStore) -> None:
    first = put(store, "a", "b")
    store.visible.limit(first)
    put(store, "c")
    put(store, "d", qid=1)
    assert store.visible.queue_range("T", 0) == (0, 2)
    assert store.visible.queue_range("T", 1) == (0, 0)
    assert bodies(store.visible.read_queue("T", 0, 0, 10)) == ["a", "b"]
    assert store.visible.read_entries("T", 0, 2, 10) == []
    assert store.visible.get("T", 0, 2) is None and store.visible.get("T", 0, 1) is not None
    assert bodies(store.reads.read_queue("T", 0, 0, 10)) == ["a", "b", "c"]  # the store's own reads see the whole log


def test_the_bound_only_moves_forward_and_reveals_what_it_passes(store: MessageStore) -> None:
    store.visible.limit(0)
    ends = [put(store, body) for body in ("a", "b", "c")]
    store.visible.advance(ends[1])
    store.visible.advance(ends[0])  # never back
    assert store.visible.bound == ends[1]
    assert bodies(store.visible.read_queue("T", 0, 0, 10)) == ["a", "b"]
    store.visible.advance(ends[2])
    assert store.visible.queue_range("T", 0) == (0, 3)


def test_listeners_hear_of_a_queue_when_the_bound_reveals_it_not_when_it_is_written(store: MessageStore) -> None:
    heard: list[tuple[str, int]] = []
    store.visible.add_listener(lambda topic, qid: heard.append((topic, qid)))
    store.visible.limit(0)
    a = put(store, "a")
    b = put(store, "b", qid=1)
    assert heard == []
    store.visible.advance(a)
    assert heard == [("T", 0)]
    store.visible.advance(b)
    assert heard == [("T", 0), ("T", 1)]
    store.visible.advance(b + 1000)
    assert heard == [("T", 0), ("T", 1)]  # nothing more hidden: nobody woken


async def test_a_receive_waits_for_the_bound_and_a_long_poll_wakes_when_it_advances(store: MessageStore) -> None:
    """The delivery service behind HTTP receive and the gRPC front's ReceiveMessage."""
    service = DeliveryService(store, DeliveryPolicy(), time.monotonic)
    replicated = put(store, "replicated")
    store.visible.limit(replicated)
    leader_only = put(store, "leader only")
    assert bodies(d.message for d in await service.receive("g", "T", 10, invisible=30, wait=0)) == ["replicated"]
    assert await service.receive("g", "T", 10, invisible=30, wait=0.2) == []
    poll = asyncio.ensure_future(service.receive("g", "T", 10, invisible=30, wait=10))
    await run_ready()
    assert not poll.done()
    started = time.monotonic()
    store.visible.advance(leader_only)
    delivered = await asyncio.wait_for(poll, 2)
    assert bodies(d.message for d in delivered) == ["leader only"]
    assert time.monotonic() - started < 1.0


def test_the_dlq_listing_stops_at_the_bound(store: MessageStore) -> None:
    store.create_topic(dlq_topic("g"), 1)
    moved = store.put([PutItem(dlq_topic("g"), 0, b"dead", {"REAL_TOPIC": "T"})])[1]
    store.visible.limit(moved)
    store.put([PutItem(dlq_topic("g"), 0, b"not yet replicated", {"REAL_TOPIC": "T"})])
    assert bodies(dead_letters.dead_letters(store, "g", 0, 10)) == ["dead"]
    assert dead_letters.depth(store, "g") == 1


MESSAGE_READS = re.compile(r"\bstore\.(reads\.)?(read_entries|read_queue|get|read_at)\(")


def test_the_fronts_and_the_delivery_service_read_messages_only_through_the_visible_reads() -> None:
    offenders = [f"{path.relative_to(BROKER.parent)}:{n}: {line.strip()}"
                 for folder in ("api", "grpc_front", "delivery") for path in sorted((BROKER / folder).rglob("*.py"))
                 for n, line in enumerate(path.read_text().splitlines(), 1) if MESSAGE_READS.search(line)]
    assert offenders == []
