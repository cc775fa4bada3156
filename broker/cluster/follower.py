"""A follower's replication loop: one stream from the leader, its runs appended unchanged, an ack per completed fsync.

Before the stream opens the follower asks where its own last term ends in the
leader's log and cuts its tail there (an old leader's divergent writes). Its first
message names the term it knows; a run from a lower term, or one that does not start
where this log ends, ends the stream (the next opens from the end). A run's bytes are
appended while the last run's fsync runs (the group commit shares one fsync among all
that wait); each completed fsync is acked on the same stream (``DurableReports``).
Nothing is copied beside the log: consumer acks, topics, producer registrations and the
receipt-handle key are records in it (store.state_records).
A disk that refuses the leader's bytes is logged once when it starts and once
when it works again (FailureWatch), not at every retry.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import logging
import time
from collections.abc import Callable, Iterator

import msgspec

from halfmq import wire
from halfmq.broker.store.failure_watch import FailureWatch
from halfmq.broker.store.message_store import MessageStore, StoreNotWritable

from .catch_up import BehindLeader, LogStartFollower, SnapshotTaker
from .node_view import SetPicture
from .peers import STREAM_MESSAGE_BYTES, PeerClient, PeerNotTrusted, PeerResponse, PeerStream
from .promotion_snapshots import PromotionSnapshots
from .stream_frames import BEHIND, KEEPALIVE_SECONDS, Run, ack_frame, read_run
from .term_history import TermHistory

log = logging.getLogger(__name__)

TERM_HEADER = "x-halfmq-term"
HISTORY_HEADER = "x-halfmq-term-history"
STREAM_PATH = "/v1/replication/stream"  # the leader's WebSocket (api/routes/cluster.py)


class StreamGap(Exception):
    """A run that does not begin where this follower's log ends: the stream ends and the next one starts from the end."""


class LowerTerm(Exception):
    """The node answering is from an older term than this follower knows: not its leader any more."""


class ReplicaNotStored(Exception):
    """This node's disk refused the leader's bytes (logged once by the store or ``Follower.storing``); the next tick retries."""


class DurableReports:
    """A follower's fsynced log end, told to its leader by an ack on the stream each time it moves.

    One per ``Follower.follow``; a flush that completes after it closed changes
    nothing, one that failed is kept (``failure``: nothing more is appended).
    """

    def __init__(self, durable: int) -> None:
        self.durable = durable   # on disk here
        self.failure: BaseException | None = None
        self.closed = False
        self._flushed = asyncio.Event()

    def flushing(self, done: concurrent.futures.Future[int], end: int) -> None:
        """``done`` resolves (on the group-commit thread) once ``end`` is on disk."""
        loop = asyncio.get_running_loop()

        def settled(_: object) -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody reports any more
                loop.call_soon_threadsafe(self._settled, done, end)

        done.add_done_callback(settled)

    def _settled(self, done: concurrent.futures.Future[int], end: int) -> None:
        if self.closed or done.cancelled():  # ended, or the store closed under it
            return
        if (error := done.exception()) is not None:
            self.failure = error
            return
        self.flushed(end)

    def flushed(self, end: int) -> None:
        if end > self.durable:
            self.durable = end
            self._flushed.set()

    async def stream_acks(self, stream: PeerStream, appended: Callable[[], int], show: Callable[[], None]) -> None:
        """Run for the life of one stream: an ack each time something new is on disk (the newest value when it leaves),
        and at least every ``KEEPALIVE_SECONDS`` (the leader counts a follower it hears from as in touch). ``show`` is
        called first: readers here see the newly durable bytes up to the leader's high watermark at once, not at the
        next run."""
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(KEEPALIVE_SECONDS):
                    await self._flushed.wait()
            self._flushed.clear()
            show()
            end = appended()
            await stream.send(ack_frame(min(self.durable, end), end))


class Follower:
    def __init__(self, node_id: str, store: Callable[[], MessageStore], history: TermHistory,
                 http: PeerClient, known_term: Callable[[], int], snapshot_interval: float) -> None:
        self.node_id = node_id
        self._store = store
        self.history = history
        self._http = http
        self._known_term = known_term
        self.leader_end = 0
        self.leader_high_watermark = 0
        self.picture: SetPicture | None = None  # the followed leader's picture of the set, the last one it sent
        self._leader_history: list[tuple[int, int]] | None = None  # the followed leader's, as the last run that had it
        snapshots = SnapshotTaker(node_id, http)
        self.log_start = LogStartFollower(node_id, snapshots)  # deletes what the leader's retention deleted (catch_up.py)
        self.promotion = PromotionSnapshots(node_id, http, snapshots, snapshot_interval)  # (promotion_snapshots.py)
        who = node_id.replace("%", "%%")
        self.storing = FailureWatch(f"node {who} cannot store the leader's log: %s; replication retries until the disk takes it",
                                    f"node {who} stores the leader's log again", log)
        self.trusting = FailureWatch(f"node {who} does not follow: %s", f"node {who} trusts its leader's certificate again", log)
        self.error: str | None = None  # why replication from the leader last stopped; None once a stream is open (the view's)

    def stopped(self, exc: BaseException) -> None:
        """Replication from the leader stopped on ``exc``: the view says so until a stream is open again; a certificate
        this node does not trust is logged once (a setting to fix: every retry meets it), not at every tick."""
        self.error = str(exc) or repr(exc)
        if isinstance(exc, PeerNotTrusted):
            self.trusting.failed(exc)

    async def follow(self, leader_url: str, term: int) -> None:
        """Replicate from ``leader_url`` until cancelled or the leader stops answering as leader."""
        await self._cut_divergent_tail(leader_url, term)
        self._leader_history = None  # the first answer carries it
        self.picture = None  # an earlier leader's picture is not this one's
        store = self._store()
        reports = DurableReports(min(store.flushed_offset, store.commit_log.end_offset))
        loop = asyncio.get_running_loop()
        snapshots = loop.create_task(self.promotion.run(leader_url, self._store))
        try:
            await self._stream(leader_url, term, reports)
        finally:
            reports.closed = True
            snapshots.cancel()

    async def _stream(self, leader_url: str, term: int, reports: DurableReports) -> None:
        """One stream from the leader: its runs appended as they come, an ack each time an fsync completes (the newest
        wins) and at least every ``KEEPALIVE_SECONDS``. A run that does not start where this log ends (a gap), a lower
        term or a closed socket ends it: the next tick connects again (follower_role.py)."""
        store = self._store()
        hello = wire.FetchRequest(node_id=self.node_id, term=term, from_offset=store.commit_log.end_offset,
                                  durable_offset=reports.durable, high_watermark=self.leader_high_watermark, history_term=None)
        # a run is one write group at most when the group is larger than RUN_MAX_BYTES; a group never spans segments
        stream = await self._http.stream(f"{leader_url}{STREAM_PATH}", msgspec.json.encode(hello),
                                         store.config.segment_bytes + STREAM_MESSAGE_BYTES)
        self.error = None
        self.trusting.succeeded()
        acks = asyncio.get_running_loop().create_task(reports.stream_acks(
            stream, lambda: self._store().commit_log.end_offset, lambda: self._show_acknowledged(self._store())))
        try:
            while True:
                run = read_run(await stream.receive())
                if acks.done():
                    acks.result()  # (raises what ended it)
                await self._keep_run(leader_url, run, reports)
        finally:
            acks.cancel()
            await stream.aclose()

    def _check_run(self, leader_url: str, run: Run, store: MessageStore) -> None:
        """A run this follower may append: its term, its segment size, where it starts."""
        if run.term < self._known_term():
            raise LowerTerm(f"{leader_url} streams for term {run.term}, older than the known term {self._known_term()}")
        if run.kind == BEHIND:
            raise BehindLeader(run.from_offset)
        if run.segment_bytes != store.config.segment_bytes:
            raise RuntimeError("the leader uses another segment size: offsets could not match; configure the same segment_bytes")
        if run.from_offset != store.commit_log.end_offset:
            raise StreamGap(f"{leader_url} streams from {run.from_offset}, this log ends at {store.commit_log.end_offset}")

    async def _keep_run(self, leader_url: str, run: Run, reports: DurableReports) -> None:
        self._raise_if_fsync_failed(reports)
        store = self._store()
        self._check_run(leader_url, run, store)
        start = run.from_offset
        self.leader_end = run.log_end
        self.leader_high_watermark = max(self.leader_high_watermark, run.high_watermark)
        if run.picture is not None:
            self.picture = SetPicture.of(json.loads(run.picture), time.monotonic())
        if run.history is not None:
            self._leader_history = run.history
        with self._appending(store, run.data):
            self._append(store, run.data, start, reports)
        if run.log_start > store.log_start.offset:
            await self.log_start.follow(leader_url, store, run.log_start)

    async def _cut_divergent_tail(self, leader_url: str, term: int) -> None:
        asked = self.history.last_term
        answer = await self._http.get(f"{leader_url}/v1/replication/term-end", params={"term": asked, "node_id": self.node_id})
        answer.raise_for_status()
        self._check_term(answer)
        said = answer.json()
        store = self._store()
        cut = self.history.divergence(asked, int(said.get("term", asked)), int(said["end_offset"]), store.commit_log.end_offset)
        if store.commit_log.end_offset > cut:
            log.warning("node %s: log ends at %d, past where term %d ends on the leader (%d): cutting the divergent tail",
                        self.node_id, store.commit_log.end_offset, self.history.last_term, cut)
            store.truncate_log(cut)  # on the loop, not a thread: a cancelled follower must not leave it running
            self.history.truncate(cut)
            self.leader_high_watermark = min(self.leader_high_watermark, cut)

    def _show_acknowledged(self, store: MessageStore) -> None:
        """Readers of this node see what the leader acknowledged and this node has as durably: never more (after a
        failover the next leader may cut what the old one had not acknowledged; a reader must not have seen it)."""
        store.visible.advance(min(store.acknowledged_end, self.leader_high_watermark))

    def _raise_if_fsync_failed(self, reports: DurableReports) -> None:
        """ReplicaNotStored (logged once) when an fsync of bytes appended earlier failed: nothing more is appended."""
        if reports.failure is not None:
            self.storing.failed(reports.failure)
            raise ReplicaNotStored(str(reports.failure))

    @contextlib.contextmanager
    def _appending(self, store: MessageStore, data: bytes) -> Iterator[None]:
        """Around the append of the leader's ``data`` (a run's): a disk that refuses them is
        ReplicaNotStored (logged once); once appended, what the leader acknowledged is shown to this node's readers."""
        try:
            yield
        except StoreNotWritable as exc:  # the store's own FailureWatch has said so, once
            raise ReplicaNotStored(str(exc)) from exc
        except OSError as exc:  # a failed fsync, the term history
            self.storing.failed(exc)
            raise ReplicaNotStored(str(exc)) from exc
        if data:
            self.storing.succeeded()
        self._show_acknowledged(store)

    def _append(self, store: MessageStore, data: bytes, start: int, reports: DurableReports) -> None:
        """Append the leader's bytes, take its term history over them, and start their fsync (not awaited).

        The history covers the appended bytes at once, so a node elected before the
        fsync completes begins its term after the right entries; its position counts
        only the entries within what is on disk (positions.position_of).
        """
        end = store.append_replicated(data, start) if data else start
        self.history.adopt(self._leader_history or [], end)
        if end > reports.durable:
            flushed = store.wait_flushed(end)
            if flushed is None:  # async flush mode: written is what counts
                reports.flushed(end)
            else:
                reports.flushing(flushed, end)

    def _check_term(self, answer: PeerResponse) -> None:
        their = int(answer.headers.get(TERM_HEADER, "0"))
        if their < self._known_term():
            raise LowerTerm(f"{answer.url} answers for term {their}, older than the known term {self._known_term()}")
