"""A follower's replication loop: fetch the leader's log bytes, append them unchanged, fsync, report.

Before the first fetch from a leader the follower asks where its own last term
ends in the leader's log and cuts its tail there (an old leader's divergent
writes). Every fetch names the term the follower knows; an answer from a lower
term is refused. Nothing is copied beside the log: consumer acks, topics, producer
registrations and the receipt-handle key are records in it (store.state_records).
A disk that refuses the leader's bytes is logged once when it starts and once
when it works again (FailureWatch), not at every retry.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from pathlib import Path

import httpx

from halfmq.broker.store.failure_watch import FailureWatch
from halfmq.broker.store.message_store import MessageStore, StoreNotWritable

from .term_history import TermHistory

log = logging.getLogger(__name__)

TERM_HEADER = "x-halfmq-term"
HISTORY_HEADER = "x-halfmq-term-history"
SEGMENT_HEADER = "x-halfmq-segment-bytes"
HIGH_WATERMARK_HEADER = "x-halfmq-high-watermark"  # the leader's; a follower elected next starts showing the log there


class LowerTerm(Exception):
    """The node answering is from an older term than this follower knows: not its leader any more."""


class ReplicaNotStored(Exception):
    """This node's disk refused the leader's bytes (logged once by the store or ``Follower.storing``); the next tick retries."""


class Follower:
    def __init__(self, node_id: str, store: Callable[[], MessageStore], history: TermHistory, data_dir: Path,
                 http: httpx.AsyncClient, known_term: Callable[[], int]) -> None:
        self.node_id = node_id
        self._store = store
        self.history = history
        self.data_dir = data_dir
        self._http = http
        self._known_term = known_term
        self.leader_end = 0
        self.leader_high_watermark = 0
        who = node_id.replace("%", "%%")
        self.storing = FailureWatch(f"node {who} cannot store the leader's log: %s; replication retries until the disk takes it",
                                    f"node {who} stores the leader's log again", log)

    async def follow(self, leader_url: str, term: int) -> None:
        """Replicate from ``leader_url`` until cancelled or the leader stops answering as leader."""
        await self._cut_divergent_tail(leader_url, term)
        while True:
            await self._fetch_once(leader_url, term)

    async def _cut_divergent_tail(self, leader_url: str, term: int) -> None:
        answer = await self._http.get(f"{leader_url}/v1/replication/term-end", params={"term": self.history.last_term, "node_id": self.node_id})
        answer.raise_for_status()
        self._check_term(answer)
        cut = int(answer.json()["end_offset"])
        store = self._store()
        if store.commit_log.end_offset > cut:
            log.warning("node %s: log ends at %d, past where term %d ends on the leader (%d): cutting the divergent tail",
                        self.node_id, store.commit_log.end_offset, self.history.last_term, cut)
            store.truncate_log(cut)  # on the loop, not a thread: a cancelled follower must not leave it running
            self.history.truncate(cut)
            self.leader_high_watermark = min(self.leader_high_watermark, cut)

    async def _fetch_once(self, leader_url: str, term: int) -> None:
        store = self._store()
        start = store.commit_log.end_offset
        answer = await self._http.post(f"{leader_url}/v1/replication/fetch",
                                       json={"node_id": self.node_id, "term": term, "from_offset": start,
                                             "high_watermark": self.leader_high_watermark})
        answer.raise_for_status()
        self._check_term(answer)
        if int(answer.headers.get(SEGMENT_HEADER, store.config.segment_bytes)) != store.config.segment_bytes:
            raise RuntimeError("the leader uses another segment size: offsets could not match; configure the same segment_bytes")
        self.leader_end = int(answer.headers.get("x-halfmq-log-end", start))
        self.leader_high_watermark = int(answer.headers.get(HIGH_WATERMARK_HEADER, self.leader_high_watermark))
        try:
            await self._keep(store, answer, start)
        except StoreNotWritable as exc:  # the store's own FailureWatch has said so, once
            raise ReplicaNotStored(str(exc)) from exc
        except OSError as exc:  # a failed fsync, the term history
            self.storing.failed(exc)
            raise ReplicaNotStored(str(exc)) from exc
        if answer.content:
            self.storing.succeeded()

    async def _keep(self, store: MessageStore, answer: httpx.Response, start: int) -> None:
        """Append the fetched bytes, wait for their fsync, take the leader's term history."""
        if answer.content:
            end = store.append_replicated(answer.content, start)
            flushed = store.wait_flushed(end)
            if flushed is not None:
                await asyncio.wrap_future(flushed)
        else:
            end = start
        self.history.adopt([tuple(e) for e in json.loads(answer.headers.get(HISTORY_HEADER, "[]"))], end)  # type: ignore[misc]

    def _check_term(self, answer: httpx.Response) -> None:
        their = int(answer.headers.get(TERM_HEADER, "0"))
        if their < self._known_term():
            raise LowerTerm(f"{answer.url} answers for term {their}, older than the known term {self._known_term()}")
