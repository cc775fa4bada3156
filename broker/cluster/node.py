"""One node of a broker set: a small coordinator of its lease, its two roles and its takeover.

A leader renews its lease on a task of its own (leader_lease.py). A tick every
``lease_ttl / 5`` seconds, and at once when the watch of the leader key sees it
change (takeover.py), does the rest: a leader checks the leader key is still its
own and publishes the in-sync set (leader_role.py); a follower reads who leads and
follows it, or stands for election when no one does and it is in sync
(follower_role.py). Roles change only here, through decisions.TRANSITIONS, under
one lock (standing.py): a promotion, a step-down, and the lease's renewals.

What serving in a role means is the composition root's (role_services.py, answered by
broker/runtime.py): a promotion keeps the store open and has the services above it built
again, with the check-backs and the RocketMQ front started; a step-down has the store
reopened from the data dir (no in-memory leader state stays), serving only replication
and a follower's reads.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from halfmq.broker.config import BrokerSettings
from halfmq.broker.store.message_store import MessageStore
from halfmq.errors import NotLeader

from .decisions import Event, Role
from .etcd import ClusterAddress, EtcdClient, EtcdUnavailable, KeyValue, Lease
from .etcd_auth import broker_credentials
from .follower_role import FollowerRole
from .high_watermark import HighWatermark
from .leader_claims import LeaderClaims
from .leader_lease import LeaderLease
from .leader_role import LeaderRole
from .node_view import followed_picture, node_view, picture_due, set_picture
from .peers import PeerClient
from .replica_tracker import ReplicaTracker
from .role_services import Leadership, RoleServices
from .standing import Standing
from .takeover import Takeover
from .term_history import TermHistory

log = logging.getLogger(__name__)

Durable = Callable[[int], Awaitable[None]]


class ClusterNode:
    """``services``: what the node serves with in its role (the root's). ``etcd`` and ``renewals`` (the lease's own
    connection) are built from the settings unless given."""

    def __init__(self, settings: BrokerSettings, services: RoleServices, clock: Callable[[], float] = time.monotonic,
                 wall_clock: Callable[[], float] = time.time, etcd: EtcdClient | None = None,
                 renewals: EtcdClient | None = None) -> None:
        if not settings.cluster or not settings.node_id:
            raise ValueError("a broker set needs --cluster etcd://HOST:PORT/PREFIX and --node-id")
        self.settings = settings
        self.services = services
        self.node_id = settings.node_id
        self.url = settings.advertise_url or f"http://{settings.host}:{settings.port}"
        self.members = settings.members()
        self.address = ClusterAddress.parse(settings.cluster)
        credentials, timeout = broker_credentials(settings), max(0.5, settings.lease_ttl / 5)
        self.etcd = etcd or EtcdClient(self.address.endpoint, timeout, credentials)
        renewals = renewals or EtcdClient(self.address.endpoint, timeout, credentials)  # never behind the tick
        self.standing = Standing(self.node_id, self.url)
        self.lease = LeaderLease(self.standing, renewals, settings.lease_ttl, self._step_down, clock)
        self.history = TermHistory(settings.data_dir / "term-history.json")
        self.tracker = ReplicaTracker(self.node_id, settings.cluster_size, settings.replica_lag_time, clock,
                                      on_change=lambda: self.watermark.advance())
        self.appended = asyncio.Event()  # set by every append while leading: every replication stream's push loop wakes
        self.watermark = HighWatermark(self.tracker, lambda: self.store, self.appended.set)  # what consumers may read
        token = settings.cluster_token_file.read_text().strip() if settings.cluster_token_file else None
        self._http = PeerClient(self.members, token, ca_file=settings.peer_ca_file)  # the only client that calls peers
        self._wake = asyncio.Event()  # set by the watch: run the tick now
        self._tasks: list[asyncio.Task] = []  # the tick, the renewals, the watch
        self._clock = clock
        self.etcd_error: str | None = None
        self._pictures_sent: dict[str, float] = {}  # when each member last got the set's picture (one entry per member)
        self.takeover = Takeover(self.node_id, settings.ack, self.address, self.etcd, self._http, self._wake, clock, wall_clock)
        claims = LeaderClaims(self.node_id, self.members, self.address, self.etcd, settings.lease_ttl, clock)
        self.following = FollowerRole(self.standing, settings, self.members, self.address, self.etcd, self._http, claims,
                                      self.takeover, self.history, lambda: self.store, clock,
                                      lambda start, snapshot, also: self.services.begin_at(start, snapshot, also))
        self.leading = LeaderRole(self.standing, self.lease, settings, self.address, self.etcd, claims, self.tracker)

    # --- what the fronts ask ---------------------------------------------------------
    @property
    def store(self) -> MessageStore:
        return self.services.store

    @property
    def role(self) -> Role:
        return self.standing.role

    @property
    def term(self) -> int:
        return self.standing.term

    @property
    def writable(self) -> bool:
        return self.standing.role is Role.LEADER and self.lease.may_write()

    @property
    def last_failover(self) -> dict[str, Any] | None:
        return self.takeover.last_failover

    def picture_for(self, follower: str) -> str | None:
        """The set's picture (JSON) for a run pushed to ``follower``, when one is due (``picture_due``); None otherwise."""
        now = self._clock()
        if follower not in self.members or not picture_due(self._pictures_sent.get(follower), now):
            return None
        self._pictures_sent[follower] = now
        return json.dumps(set_picture(self), separators=(",", ":"))

    def not_leader(self) -> NotLeader:
        leader = self.standing.leader
        url = leader["url"] if leader and leader.get("node_id") != self.node_id else None
        why = ("this node leads but cannot renew its lease in etcd" if self.standing.role is not Role.FOLLOWER
               else f"node {self.node_id} is a follower")
        return NotLeader(f"{why}; the leader is {url or 'not known yet'}", leader_url=url)

    def durable(self, local: Durable) -> Durable:
        """The runtime's "durable" for a leader: the local fsync (ack=leader), or one wait for whichever majority has it
        on disk first (ack=quorum), the local fsync running beside the replication as one vote (``ReplicaTracker.wait``)."""
        async def replicated(end: int) -> None:
            if self.settings.ack == "quorum":
                await self.tracker.wait(end, self.settings.sync_flush_timeout, local=asyncio.ensure_future(local(end)))
            else:
                await local(end)
                self.watermark.advance()
            if not self.writable:  # leadership lost while waiting: acknowledge nothing
                raise self.not_leader()
            self.takeover.phase("first_ack")
        return replicated

    async def view(self) -> dict[str, Any]:
        return await node_view(self)

    # --- life ------------------------------------------------------------------------
    async def start(self) -> None:
        with contextlib.suppress(EtcdUnavailable):  # this node's registration: who is there, for the view and the fronts
            await self.etcd.put(self.address.key("nodes", self.node_id), self.services.registration(self.node_id, self.url))
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(c) for c in (self._run(), self.lease.renew_loop(), self.takeover.watch())]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        await self.following.stop()
        if self.standing.role is not Role.FOLLOWER and self.lease.id:
            with contextlib.suppress(EtcdUnavailable):
                await self.etcd.revoke(self.lease.id)  # a clean stop hands over at once, not after the TTL
        await self.etcd.aclose()
        await self.lease.renewals.aclose()
        await self._http.aclose()

    async def _run(self, every: float | None = None) -> None:
        """The tick every ``every`` s (TTL/5), and at once whenever the watch sees the leader key change."""
        every = every or self.settings.lease_ttl / 5
        while True:
            self._wake.clear()  # an event from here on runs the next tick at once
            lease = self.lease.id
            try:
                async with self.standing.lock:
                    await self.tick()
                self.etcd_error = None
            except EtcdUnavailable as exc:
                if self.etcd_error is None:
                    log.error("node %s: %s", self.node_id, exc)
                self.etcd_error = str(exc)
                await self.lease.renewal_failed(lease, str(exc))
            except Exception:
                log.exception("node %s: cluster tick failed", self.node_id)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(every):  # (not wait_for: in 3.11 it can swallow a cancel that meets a wake-up)
                    await self._wake.wait()

    async def tick(self) -> None:
        """One step of the role this node has (the caller holds the standing's lock)."""
        if self.standing.role is Role.FOLLOWER:
            elected = await self.following.tick()
            if elected is not None:
                await self._promote(elected.term, elected.lease, elected.sent, elected.in_sync, elected.previous)
        elif (why := await self.leading.tick()) is not None:
            await self._step_down(why)

    # --- the changes of role (the standing's lock held) -------------------------------------
    async def _promote(self, term: int, lease: Lease, sent: float, in_sync: frozenset[str], previous: str | None) -> None:
        """Won the election of ``term``: lead from this log's end, the services built again over the store kept open."""
        self.takeover.saw_leader(term, self.node_id, previous)
        self.takeover.elected(term)
        await self.following.stop()
        self.standing.term = term
        self.lease.granted(lease, sent)
        store = self.store
        self.history.begin(term, store.commit_log.end_offset)
        shown = min(self.following.replication.leader_high_watermark, store.acknowledged_end)  # the last leader's mark
        self.tracker.reset(in_sync, lagging=previous, high_watermark=shown, term_start=store.commit_log.end_offset)
        self.standing.leader = self.standing.own_claim()
        await self.services.lead(Leadership(self.durable, self._still_leading, self._opened, self.registrations))
        self.takeover.took_over()
        self.standing.change(Event.ELECTED)
        log.warning("node %s: leader of term %d from log offset %d (in sync: %s)", self.node_id, term,
                    self.store.commit_log.end_offset, sorted(self.tracker.in_sync))
        if (why := await self.leading.publish_in_sync()) is not None:  # the old leader out at once, not after the lag time
            await self._step_down(why)

    async def _step_down(self, why: str) -> None:
        log.warning("node %s: stepping down from term %d: %s", self.node_id, self.standing.term, why)
        self.standing.change(Event.LOST)
        self.lease.ended()
        self.standing.leader = None
        self.takeover.stepped_down()
        self.tracker.fail_all(self.not_leader())
        await self.services.follow()

    def _still_leading(self) -> None:
        """Checked as deliveries are handed out: a long poll that wakes once this node may no longer write (a pause past
        its lease fence while another node led) hands out nothing, so no delivery comes from a deposed leader's state."""
        if not self.writable:
            raise self.not_leader()

    def _opened(self, store: MessageStore) -> None:
        """The leader's services were built over ``store``: consumers see what the high watermark covers, and a waiting
        replication stream pushes as soon as anything is appended."""
        self.watermark.lead(store)
        store.add_listener(self._on_append)

    def _on_append(self, topic: str, queue_id: int) -> None:
        self.appended.set()

    async def registrations(self) -> list[KeyValue]:
        """Every node's registration in etcd (the new leader's fronts and the Kafka front read the members' addresses there)."""
        return await self.etcd.get_prefix(self.address.key("nodes", ""))

    def leader_url(self) -> str | None:
        """The URL of the leader this node sees, when it is another member (None: none known, or this node)."""
        leader = self.standing.leader
        return leader.get("url") if leader and leader.get("node_id") != self.node_id else None

    async def post_to_leader_as(self, path: str, json: Any, token: str | None) -> Any:
        """A POST to the leader's HTTP front as a client (its own bearer token, not the cluster's): peers.PeerClient.post_as.
        LookupError when no other member is known to lead."""
        url = self.leader_url()
        if url is None:
            raise LookupError("no other member is known to lead")
        return await self._http.post_as(url.rstrip("/") + path, json, token)

    def leader_and_term(self) -> tuple[str | None, int]:
        """The member id of the leader this node sees (None: none known) and the highest term it knows of."""
        leader = self.standing.leader
        return (leader.get("node_id") if leader else None), self.standing.term

    def in_sync_members(self) -> frozenset[str] | None:
        """The in-sync set as this node knows it: its own while it leads, else the one in the picture the leader it
        sees last sent (None: none from that leader yet). A dead member leaves it within ``replica_lag_time``."""
        if self.role is not Role.FOLLOWER:
            return self.tracker.in_sync
        picture = followed_picture(self)
        return frozenset(picture.in_sync) if picture is not None else None
