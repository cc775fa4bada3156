"""The store's parts built by hand over a data dir, as MessageStore builds them: a part's tests hand it what it uses."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from halfmq.broker.store.checkpoints import Checkpoints
from halfmq.broker.store.commit_log import CommitLog
from halfmq.broker.store.consume_queues import ConsumeQueues
from halfmq.broker.store.key_index import KeyIndex
from halfmq.broker.store.offset_table import OffsetTable
from halfmq.broker.store.queue_appends import QueueAppends
from halfmq.broker.store.recovery import Recovery
from halfmq.broker.store.topics import TopicTable
from halfmq.broker.store.write_gate import WriteGate
from halfmq.broker.store.writer import Writer


@dataclass
class StoreParts:
    root: Path
    commit_log: CommitLog = field(init=False)
    queues: ConsumeQueues = field(init=False)
    keys: KeyIndex = field(init=False)
    topics: TopicTable = field(init=False)
    offsets: OffsetTable = field(init=False)
    gate: WriteGate = field(default_factory=WriteGate)
    write_lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.commit_log = CommitLog(self.root / "commitlog", 1 << 20)
        self.queues = ConsumeQueues(self.root / "consumequeue", 1000)
        self.keys = KeyIndex(self.root / "index", 1024, 4096, self.commit_log.read_record)
        self.topics = TopicTable(self.root / "topics.json")
        self.offsets = OffsetTable(self.root / "consumer_offsets.json")

    def writer(self) -> Writer:
        return Writer(self.commit_log, QueueAppends(self.queues, self.gate), self.keys, self.gate, self.write_lock, [], time.time)

    def checkpoints(self) -> Checkpoints:
        return Checkpoints(self.root / "checkpoint.json", self.commit_log, self.queues, self.keys, self.topics, self.offsets,
                           self.gate, self.write_lock)

    def recovery(self) -> Recovery:
        return Recovery(self.commit_log, self.queues, self.keys, self.topics, self.offsets, self.checkpoints(), self.gate)

    def close(self) -> None:
        self.queues.close()
        self.commit_log.close()
        self.keys.close()
