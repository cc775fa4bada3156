"""One node of a broker set: its role, its lease in etcd, and the runtime it serves with.

A leader renews its lease on a task of its own (leader_lease.py). A tick every
``lease_ttl / 5`` seconds, and at once when the watch of the leader key sees it
change (takeover.py), does the rest: a leader checks the leader key is still its
own and publishes the in-sync set; a follower reads who leads and follows it, or
stands for election when no one does and it is in sync. Roles change only
through decisions.TRANSITIONS, under one lock.

Changing role builds the runtime again: a new leader keeps its store open, rebuilds
its transaction index from the replicated half and op queues and starts the check
service, which checks back every pending half; a node that steps down reopens its
store from the data dir (no in-memory leader state stays) and serves only replication.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from halfmq.broker.config import BrokerSettings
from halfmq.broker.grpc_front.front import LeaderFront
from halfmq.broker.runtime import BrokerRuntime
from halfmq.errors import NotLeader

from .decisions import (
    OUT_OF_TOUCH_TTLS,
    Claim,
    Event,
    LeaseFence,
    Role,
    judge_leader_claim,
    may_campaign,
    may_clear_foreign_claim,
    next_role,
    steps_down_cut_off,
)
from .etcd import ClusterAddress, EtcdClient, EtcdUnavailable, KeyValue, Lease, absent, unchanged
from .etcd_auth import broker_credentials
from .failover_phases import FailoverPhases
from .follower import Follower, ReplicaNotStored
from .high_watermark import HighWatermark
from .leader_lease import LeaseRenewals
from .node_view import node_view
from .peers import PeerClient
from .positions import may_stand
from .replica_tracker import ReplicaTracker
from .takeover import Takeover
from .term_history import TermHistory

log = logging.getLogger(__name__)

Durable = Callable[[int], Awaitable[None]]


class ClusterNode(LeaseRenewals, Takeover):
    def __init__(self, settings: BrokerSettings, state: Any, clock: Callable[[], float] = time.monotonic,
                 wall_clock: Callable[[], float] = time.time) -> None:
        if not settings.cluster or not settings.node_id:
            raise ValueError("a broker set needs --cluster etcd://HOST:PORT/PREFIX and --node-id")
        self.settings = settings
        self.state = state  # the app's state: .runtime is swapped on a role change
        self.node_id = settings.node_id
        self.url = settings.advertise_url or f"http://{settings.host}:{settings.port}"
        self.members = settings.members()
        self.address = ClusterAddress.parse(settings.cluster)
        credentials, timeout = broker_credentials(settings), max(0.5, settings.lease_ttl / 5)
        self.etcd = EtcdClient(self.address.endpoint, timeout, credentials)
        self.renewals = EtcdClient(self.address.endpoint, timeout, credentials)  # the lease's own connection: never behind the tick
        self.fence = LeaseFence.for_ttl(settings.lease_ttl)  # until a grant says what etcd gave
        self._clock = clock
        self._wall_clock = wall_clock
        self.role = Role.FOLLOWER
        self.term = 0  # the highest term this node knows of
        self.leader: dict[str, str] | None = None
        self.lease = 0
        self.renewal_sent_at: float | None = None
        self.history = TermHistory(settings.data_dir / "term-history.json")
        self.tracker = ReplicaTracker(self.node_id, settings.cluster_size, settings.replica_lag_time, clock,
                                      on_change=lambda: self.watermark.advance())
        self.appended = asyncio.Event()
        self.watermark = HighWatermark(self.tracker, lambda: self.runtime.store, self.appended.set)  # what consumers may read
        token = settings.cluster_token_file.read_text().strip() if settings.cluster_token_file else None
        self._http = PeerClient(self.members, token, timeout=httpx.Timeout(5.0, connect=1.0))  # the only client that calls peers
        self._http.event_hooks["response"].append(self._peer_answered)
        self._foreign: tuple[int, bytes] | None = None  # the foreign leader key last warned about (revision, value)
        self._foreign_since = 0.0
        self.follower = Follower(self.node_id, lambda: self.runtime.store, self.history, self._http, lambda: self.term)
        self._following: tuple[str, int] | None = None
        self._follow_task: asyncio.Task | None = None
        self._tasks: list[asyncio.Task] = []  # the tick, the renewals, the watch
        self._wake = asyncio.Event()  # set by the watch: run the tick now
        self._role_lock = asyncio.Lock()  # the tick and the renewals both may change the role
        self.etcd_error: str | None = None
        self.last_failover: dict[str, Any] | None = None  # the view's: the last change of leader this node saw
        self._last_leader: str | None = None  # whom this node last led or followed
        self._leader_answered_at: float | None = None  # the followed leader's last answer to this node
        self._gone_seen_at: float | None = None  # when this node saw the leader key gone (None: a leader is known)
        self._failover: FailoverPhases | None = None  # this node's own election, timed until its first acknowledged write
        self.grpc = LeaderFront(self.url, settings.grpc_port)  # the RocketMQ 5 front: on while this node leads (issue 32, C2)

    # --- what the HTTP layer asks --------------------------------------------------
    @property
    def runtime(self) -> BrokerRuntime:
        rt: BrokerRuntime = self.state.runtime
        return rt

    @property
    def writable(self) -> bool:
        return self.role is Role.LEADER and self.fence.may_write(self._clock(), self.renewal_sent_at)

    def _still_leading(self) -> None:
        """Checked as deliveries are handed out: a long poll that wakes once this node may no longer write (a pause past
        its lease fence while another node led) hands out nothing, so no delivery comes from a deposed leader's state."""
        if not self.writable:
            raise self.not_leader()

    def not_leader(self) -> NotLeader:
        url = self.leader["url"] if self.leader and self.leader.get("node_id") != self.node_id else None
        why = ("this node leads but cannot renew its lease in etcd" if self.role is not Role.FOLLOWER
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
            if self._failover is not None:
                self._failover_phase("first_ack")
        return replicated

    # --- life ------------------------------------------------------------------------
    async def start(self) -> None:
        await self._register()
        self._tasks = [asyncio.get_running_loop().create_task(c) for c in (self._run(), self._renew_loop(), self._watch_leader())]

    async def stop(self) -> None:
        for task in (*self._tasks, self._follow_task):
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        if self.role is not Role.FOLLOWER and self.lease:
            with contextlib.suppress(EtcdUnavailable):
                await self.etcd.revoke(self.lease)  # a clean stop hands over at once, not after the TTL
        await self.etcd.aclose()
        await self.renewals.aclose()
        await self._http.aclose()

    async def _run(self, every: float | None = None) -> None:
        """The tick every ``every`` s (TTL/5), and at once whenever the watch sees the leader key change."""
        every = every or self.settings.lease_ttl / 5
        while True:
            self._wake.clear()  # an event from here on runs the next tick at once
            lease = self.lease
            try:
                async with self._role_lock:
                    await self.tick()
                self.etcd_error = None
            except EtcdUnavailable as exc:
                if self.etcd_error is None:
                    log.error("node %s: %s", self.node_id, exc)
                self.etcd_error = str(exc)
                await self._renewal_failed(lease, str(exc))
            except Exception:
                log.exception("node %s: cluster tick failed", self.node_id)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(every):  # (not wait_for: in 3.11 it can swallow a cancel that meets a wake-up)
                    await self._wake.wait()

    async def tick(self) -> None:
        if self.role is Role.FOLLOWER:
            await self._as_follower()
        else:
            await self._as_leader()

    async def _register(self) -> None:
        with contextlib.suppress(EtcdUnavailable):
            await self.etcd.put(self.address.key("nodes", self.node_id), self.grpc.registration(self.node_id, self.url))

    # --- leader ------------------------------------------------------------------------
    async def _as_leader(self) -> None:
        kv = await self.etcd.get(self.address.key("leader"))
        if kv is not None and kv.mod_revision != self.term and self._judge(kv) is Claim.FOREIGN:
            if not await self._reclaim(kv) and self._judge(await self.etcd.get(self.address.key("leader"))) is not Claim.FOREIGN:
                await self._step_down("the leader key changed while putting it back over a foreign one")
                return  # (written over again by the foreign writer: the next tick puts it back)
        elif kv is None or kv.mod_revision != self.term:
            await self._step_down("the leader key is gone or another node's")
            return
        window = OUT_OF_TOUCH_TTLS * self.fence.ttl
        if steps_down_cut_off(self.settings.ack, len(self.tracker.in_sync), self.tracker.out_of_touch(window), self.settings.cluster_size):
            await self._step_down(f"no majority of the set fetched in {window:.0f} s: cut off from its followers, it could acknowledge nothing")
            return
        await self._publish_in_sync()

    async def _reclaim(self, foreign: KeyValue) -> bool:
        """A foreign value over our leader key while our lease lives: put ours back (a new term) unless it changed again.

        No member can have been elected meanwhile (the key never went away), so this
        node still leads; its followers follow the new term, nobody follows the foreign one.
        The term history gets no entry: the same leadership keeps writing the same stretch
        of the log, so no follower has a tail to cut.
        """
        self._warn_foreign(foreign)
        key = self.address.key("leader")
        term = await self.etcd.put_if(key, json.dumps({"node_id": self.node_id, "url": self.url}), self.lease,
                                      [unchanged(key, foreign.mod_revision)])
        if term is None:
            return False
        log.warning("node %s: put its leader key back over a foreign one: term %d -> %d", self.node_id, self.term, term)
        self.term = term
        self.leader = {"node_id": self.node_id, "url": self.url}
        return True

    async def _publish_in_sync(self) -> None:
        """Write the in-sync set to etcd if it should change, guarded by this term's leader key; then count it."""
        wanted = self.tracker.wanted_in_sync()
        if wanted == self.tracker.in_sync:
            return
        if await self.etcd.put_if(self.address.key("in-sync"), json.dumps(sorted(self.tracker.publishing(wanted))), 0,
                                  [unchanged(self.address.key("leader"), self.term)]) is None:
            if self._judge(await self.etcd.get(self.address.key("leader"))) is not Claim.FOREIGN:
                await self._step_down("the leader key changed while publishing the in-sync set")
            return  # a foreign value over our key: the next tick puts ours back, then publishes
        log.info("node %s: in-sync set now %s", self.node_id, sorted(wanted))
        self.tracker.published(wanted)

    async def _step_down(self, why: str) -> None:
        log.warning("node %s: stepping down from term %d: %s", self.node_id, self.term, why)
        self._set_role(next_role(self.role, Event.LOST))
        self.renewal_sent_at = None
        self.lease = 0
        self.leader = None
        self._failover = None
        self.tracker.fail_all(self.not_leader())
        await self._reopen(start=False)

    # --- follower ------------------------------------------------------------------------
    async def _as_follower(self) -> None:
        kv = await self.etcd.get(self.address.key("leader"))
        claim = self._judge(kv)
        if kv is not None and claim is Claim.FOREIGN:
            await self._ignore_foreign(kv)  # keep following whom we follow; no term from it
            return
        if kv is not None:
            info = kv.json()
            self.term = max(self.term, kv.mod_revision)
            if claim is Claim.OWN:
                # our own key from before a restart: nobody serves it, so hand it over now rather than after the TTL
                log.warning("node %s: revoking the lease of its own leader key from an earlier run", self.node_id)
                await self.etcd.revoke(kv.lease)
                return
            self.leader = info
            self._gone_seen_at = None
            self._saw_leader(kv.mod_revision, info["node_id"])
            await self._follow(info["url"], kv.mod_revision)
            return
        previous = self.leader["node_id"] if self.leader else None  # its lease expired: dead or cut off
        self.leader = None
        if self._gone_seen_at is None:
            self._gone_seen_at = self._clock()
        in_sync_kv = await self.etcd.get(self.address.key("in-sync"))
        in_sync = frozenset(in_sync_kv.json()) if in_sync_kv else None
        if not may_campaign(self.node_id, in_sync) or not await may_stand(self, self._http, in_sync):
            return
        sent = self._clock()
        lease = await self.etcd.grant(self.settings.lease_ttl)
        term = await self.etcd.put_if(
            self.address.key("leader"), json.dumps({"node_id": self.node_id, "url": self.url}), lease.id,
            [absent(self.address.key("leader")), unchanged(self.address.key("in-sync"), in_sync_kv.mod_revision if in_sync_kv else 0)])
        if term is None:
            with contextlib.suppress(EtcdUnavailable):
                await self.etcd.revoke(lease.id)
            return
        await self._promote(term, lease, sent, in_sync or frozenset({self.node_id}), previous)

    def _judge(self, kv: KeyValue | None) -> Claim | None:
        if kv is None:
            self._foreign = None
            return None
        try:
            claim: object = kv.json()
        except ValueError:
            claim = None
        verdict = judge_leader_claim(claim, kv.lease, self.node_id, self.members)
        if verdict is not Claim.FOREIGN:
            self._foreign = None
        return verdict

    def _warn_foreign(self, kv: KeyValue) -> None:
        """One WARNING per foreign value (a new write of it is a new value)."""
        if self._foreign == (kv.mod_revision, kv.value):
            return
        self._foreign = (kv.mod_revision, kv.value)
        self._foreign_since = self._clock()
        log.warning("node %s: ignoring the leader key in etcd: %r (revision %d, lease %d) names no member of this set %s",
                    self.node_id, kv.value[:200], kv.mod_revision, kv.lease, sorted(self.members.items()))

    async def _ignore_foreign(self, kv: KeyValue) -> None:
        """A follower never follows a foreign leader key; one that stands a whole lease TTL is removed, so a member can be elected."""
        self._warn_foreign(kv)
        if may_clear_foreign_claim(self._foreign_since, self._clock(), self.settings.lease_ttl):
            key = self.address.key("leader")
            if await self.etcd.delete_if(key, [unchanged(key, kv.mod_revision)]):
                log.warning("node %s: removed the foreign leader key (revision %d) after %ss: electing a member", self.node_id,
                            kv.mod_revision, self.settings.lease_ttl)

    async def _follow(self, url: str, term: int) -> None:
        if self._following == (url, term) and self._follow_task is not None and not self._follow_task.done():
            return
        await self._stop_following()
        log.info("node %s: following %s (term %d)", self.node_id, url, term)
        self._following = (url, term)
        self._follow_task = asyncio.get_running_loop().create_task(self._follow_loop(url, term))

    async def _follow_loop(self, url: str, term: int) -> None:
        try:
            await self.follower.follow(url, term)
        except asyncio.CancelledError:
            raise
        except ReplicaNotStored:  # a refusing disk: the follower logs it once, not at every tick
            await asyncio.sleep(0.2)
        except httpx.TransportError as exc:  # the connection failed: is anyone still listening there?
            log.info("node %s: replication from %s stopped: %r", self.node_id, url, exc)
            await self._end_dead_term(url, term)
            await asyncio.sleep(0.2)
        except Exception as exc:  # noqa: BLE001 - any failure: the next tick follows again (or campaigns)
            log.info("node %s: replication from %s stopped: %r", self.node_id, url, exc)
            await asyncio.sleep(0.2)

    async def _stop_following(self) -> None:
        """Cancel replication and wait until it has stopped touching the store (a truncation runs in a thread)."""
        task, self._follow_task, self._following = self._follow_task, None, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def _promote(self, term: int, lease: Lease, sent: float, in_sync: frozenset[str], previous: str | None) -> None:
        self._saw_leader(term, self.node_id, previous)
        self._start_failover_clock(term)
        await self._stop_following()
        self.term, self.lease, self.renewal_sent_at = term, lease.id, sent
        self.fence = LeaseFence.for_ttl(lease.ttl)  # what etcd granted (it raises a short TTL to its minimum)
        self.history.begin(term, self.runtime.store.commit_log.end_offset)
        shown = min(self.follower.leader_high_watermark, self.runtime.store.acknowledged_end)  # the last leader's mark
        self.tracker.reset(in_sync, lagging=previous, high_watermark=shown, term_start=self.runtime.store.commit_log.end_offset)
        self.leader = {"node_id": self.node_id, "url": self.url}
        await self._reopen(start=True)
        self._failover_phase("reopen")
        self._leader_answered_at = self._gone_seen_at = None
        self._set_role(next_role(self.role, Event.ELECTED))
        log.warning("node %s: leader of term %d from log offset %d (in sync: %s)", self.node_id, term,
                    self.runtime.store.commit_log.end_offset, sorted(self.tracker.in_sync))
        await self._publish_in_sync()  # the old leader out at once (a majority stays), not after the lag time

    async def _reopen(self, start: bool) -> None:
        """Build the runtime for the new role. A promotion keeps the store (no recovery) and builds the services above it
        from what it appended; a step-down reopens it, dropping the leadership's in-memory state (acks of a cut tail)."""
        old = self.runtime
        await self.grpc.stop()  # no call may reach the runtime that closes
        await old.stop(close_store=not start)
        # in a thread: building the services replays the log's state records (and a step-down recovers the store); on the
        # loop it stopped the lease renewals, so past a TTL of work every new leader lost its lease while opening (no leader)
        rt = await asyncio.to_thread(BrokerRuntime.open, self.settings, durable_wrapper=self.durable if start else None,
                                     store=old.store if start else None)
        self.state.runtime = rt
        rt.watch_auth()  # either role answers requests (a follower its reads, broker/runtime/leader_gate.py)
        if start:
            rt.delivery.fence = self._still_leading
            self.watermark.lead(rt.store)
            rt.store.add_listener(self._on_append)
            await rt.start()
            await self.grpc.lead(lambda: self.runtime, lambda: self.etcd.get_prefix(self.address.key("nodes", "")), self.members)

    def _on_append(self, topic: str, queue_id: int) -> None:
        self.appended.set()

    def _set_role(self, role: Role) -> None:
        if role is not self.role:
            log.info("node %s: %s -> %s", self.node_id, self.role.value, role.value)
            self.role = role

    # --- the view -------------------------------------------------------------------------
    async def view(self) -> dict[str, Any]:
        return await node_view(self)
