"""Small fakes of the use cases' ports (broker/usecases/ports.py): each records what the use case wrote or called.

A use case's unit test builds the use case from these directly, without a runtime, a store or a front, and asserts
what it writes, what it answers and what it refuses.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from halfmq.broker.half_messages.half_records import EndOutcome, Tx
from halfmq.broker.half_messages.state_machine import HalfEvent
from halfmq.broker.idempotence.producer_ids import SendKey, SentAnswer, SentRef
from halfmq.broker.idempotence.producer_records import SendKind
from halfmq.broker.idempotence.producer_state import ProducerState
from halfmq.broker.idempotence.send_window import Verdict
from halfmq.broker.security.access import Access
from halfmq.broker.security.policy import Action, Principal, Resource
from halfmq.broker.store.store_types import PutItem, PutResult
from halfmq.broker.store.topics import TopicConfig
from halfmq.errors import AccessDenied, TopicAlreadyExists, TopicNotFound
from halfmq.wire import OutgoingMessage, TransactionState

SCOPE: Mapping[str, Any] = {"type": "http", "path": "/test", "headers": []}


class DenyingAccess(Access):
    """Access with auth off, except that the named (action, resource) pairs are refused as a policy would refuse them."""

    def __init__(self, *denied: tuple[Action, Resource]) -> None:
        super().__init__(None)
        self.denied = set(denied)

    def authorize(self, principal: Principal, action: Action, resource: Resource, scope: Mapping[str, Any]) -> None:
        if (action, resource) in self.denied:
            raise AccessDenied(f"principal {principal.name!r} may not {action.value} {resource}",
                               action=action.value, resource=str(resource))

    def allows(self, principal: Principal, action: Action, resource: Resource) -> bool:
        return (action, resource) not in self.denied


@dataclass
class RecordingDurable:
    """The ``Durable`` port: the offsets waited for, in order."""

    waited: list[int] = field(default_factory=list)

    async def __call__(self, end: int) -> None:
        self.waited.append(end)


@dataclass
class FakeLog:
    """The commit log's end (``LogEnd``) and the write groups appended to it."""

    end: int = 1000
    groups: list[list[PutItem]] = field(default_factory=list)

    def __call__(self) -> int:
        return self.end

    def put(self, items: list[PutItem]) -> tuple[list[PutResult], int]:
        self.groups.append(items)
        results = []
        for item in items:
            results.append(PutResult(item.topic, item.queue_id, len(self.groups) - 1, self.end, len(item.body), dict(item.properties)))
            self.end += 100
        return results, self.end


@dataclass
class FakeTopics:
    """``WritableTopics``: a table of topics; creating one that exists with another queue count is refused."""

    table: dict[str, TopicConfig] = field(default_factory=dict)
    created: list[str] = field(default_factory=list)

    def add(self, name: str, queues: int = 4) -> TopicConfig:
        self.table[name] = TopicConfig(name, queues, 0)
        return self.table[name]

    def writable(self, name: str) -> tuple[TopicConfig, bool]:
        cfg = self.table.get(name)
        return (cfg, True) if cfg else (TopicConfig(name, 4, 0), False)

    def get(self, name: str) -> TopicConfig:
        if name not in self.table:
            raise TopicNotFound(f"topic {name!r} not found")
        return self.table[name]

    def create(self, name: str, queues: int | None, retention_ms: int | None = None,
               retention_bytes: int | None = None) -> tuple[TopicConfig, bool]:
        cfg = self.table.get(name)
        if cfg is not None:
            if queues is not None and queues != cfg.queues:
                raise TopicAlreadyExists(f"topic {name!r} exists with {cfg.queues} queues")
            return cfg, False
        self.created.append(name)
        self.table[name] = TopicConfig(name, queues or 4, 0, retention_ms, retention_bytes)
        return self.table[name], True

    def set_retention(self, name: str, retention_ms: int | None, retention_bytes: int | None) -> tuple[TopicConfig, int]:
        """The topic with its new limits, and the log end its record would end at (0: unchanged, nothing written)."""
        cfg = self.get(name)
        if (cfg.retention_ms, cfg.retention_bytes) == (retention_ms, retention_bytes):
            return cfg, 0
        self.table[name] = TopicConfig(name, cfg.queues, 0, retention_ms, retention_bytes)
        return self.table[name], 4343


@dataclass
class FakeSender:
    """``Sender``: writes each send as one group to a ``FakeLog`` (with the ``then`` record last, as the store does)."""

    log: FakeLog

    def prepare(self, cfg: TopicConfig, msg: OutgoingMessage) -> PutItem:
        return PutItem(cfg.name, msg.queue_id or 0, msg.body.encode(), {"UNIQ_KEY": f"id-{msg.body}", **msg.properties})

    def prepare_many(self, cfg: TopicConfig, messages: list[OutgoingMessage]) -> list[PutItem]:
        return [self.prepare(cfg, m) for m in messages]

    def send(self, topic: str, messages: list[OutgoingMessage],
             then: Callable[[list[PutItem]], PutItem] | None = None) -> tuple[list[PutResult], int]:
        items = self.prepare_many(TopicConfig(topic, 4, 0), messages)
        group = items + ([then(items)] if then else [])
        results, end = self.log.put(group)
        return results[:len(items)], end


@dataclass
class FakeWindows:
    """``SendWindows``: one producer id; ``earlier`` is what ``sent_before`` answers (a repeat) for every number."""

    earlier: SentAnswer | Verdict | None = None
    records: list[tuple[int, int]] = field(default_factory=list)  # (sequence, items) of each send record made
    noted: list[tuple[int, SentRef]] = field(default_factory=list)
    asked: list[tuple[int, int, str]] = field(default_factory=list)

    def sender(self, producer_id: int, epoch: int, principal: str) -> ProducerState:
        self.asked.append((producer_id, epoch, principal))
        return ProducerState(transactional_id="", producer_id=producer_id, epoch=epoch, owner=principal)

    def sent_before(self, producer: ProducerState, sequence: int, key: SendKey) -> SentAnswer | Verdict | None:
        return self.earlier

    def send_record(self, producer: ProducerState, sequence: int, items: list[PutItem],
                    kind: SendKind = SendKind.MESSAGES) -> PutItem:
        self.records.append((sequence, len(items)))
        return PutItem("__producer_ids", 0, b"seq", {"SEQUENCE": str(sequence)})

    def sent(self, producer: ProducerState, sequence: int, ref: SentRef) -> None:
        self.noted.append((sequence, ref))


@dataclass
class FakeHalfMessages:
    """``HalfMessages``: a table of transactions; ends and events are recorded, and answer the outcome given."""

    txs: dict[str, Tx] = field(default_factory=dict)
    outcome: EndOutcome | None = None
    ends: list[tuple[str, str | None, str, bool]] = field(default_factory=list)
    applied: list[tuple[str, HalfEvent, str]] = field(default_factory=list)
    log: FakeLog | None = None  # where half sends are written

    async def end(self, transaction_id: str, producer_group: str | None, state: str, *, from_check: bool = False) -> EndOutcome:
        return self.end_unflushed(transaction_id, producer_group, state, from_check=from_check)

    def end_unflushed(self, transaction_id: str, producer_group: str | None, state: str, *, from_check: bool = False) -> EndOutcome:
        self.ends.append((transaction_id, producer_group, state, from_check))
        assert self.outcome is not None
        return self.outcome

    def send_half(self, group: str, item: PutItem, real_queues: int, then: Callable[[list[PutItem]], PutItem] | None = None,
                  *, also: Sequence[PutItem] = ()) -> tuple[Tx, int]:
        """The half (and its companions and ``then`` record) written as one group to ``log``."""
        assert self.log is not None
        group_items = [item, *also]
        _, end = self.log.put(group_items + ([then(group_items)] if then else []))
        half = Tx(f"tx-{len(self.txs) + 1}", group, TransactionState.PENDING, end - 100, 0, 0, item.properties.get("UNIQ_KEY", ""), 0)
        self.txs[half.transaction_id] = half
        return half, end

    def get(self, transaction_id: str) -> Tx:
        return self.txs[transaction_id]

    def pending(self) -> list[Tx]:
        return list(self.txs.values())

    def apply(self, tx: Tx, event: HalfEvent, note: str = "") -> EndOutcome:
        self.applied.append((tx.transaction_id, event, note))
        assert self.outcome is not None
        return self.outcome


@dataclass
class FakeViews:
    """``Views``: answers the config or transaction itself, so a test sees what the use case showed."""

    def topic_view(self, cfg: TopicConfig) -> Any:
        return cfg

    def tx_view(self, tx: Tx, duplicate: bool = False, half: Any = None) -> Any:
        return (tx, duplicate)


def tx(transaction_id: str = "tx-1", group: str = "PG", end_offset: int = 0) -> Tx:
    """A committed transaction of ``group`` whose end record ends at ``end_offset``."""
    return Tx(transaction_id, group, TransactionState.COMMITTED, 0, 0, 0, f"msg-{transaction_id}", 0, end_offset=end_offset)


@dataclass
class FakeTopicCreation:
    """``TopicCreation``: the topics the store holds, and those created."""

    created: list[str] = field(default_factory=list)

    def topic(self, name: str) -> TopicConfig | None:
        return None

    def create_topic(self, name: str, queues: int) -> TopicConfig:
        self.created.append(name)
        return TopicConfig(name, queues, 0)
