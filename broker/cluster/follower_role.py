"""A follower's tick: follow whom the leader key names, or stand for election when no one leads.

A member's key is followed (replication runs on a task of its own: follower.py); a foreign one is
never followed (leader_claims.py); this node's own key from an earlier run is revoked at once. With
no key, a node stands only if it is in sync (decisions.may_campaign) and no answering member is
ahead of it (positions.may_stand); it wins by putting the key while it is absent and the in-sync set
unchanged, and the node then promotes itself (node.py): the role changes in one place.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from halfmq.broker.config import BrokerSettings
from halfmq.broker.store import state_snapshot
from halfmq.broker.store.message_store import MessageStore

from .catch_up import BehindLeader, take_snapshot
from .decisions import Claim, may_campaign
from .etcd import ClusterAddress, EtcdClient, EtcdUnavailable, Lease, absent, unchanged
from .follower import Follower, ReplicaNotStored
from .leader_claims import LeaderClaims
from .peers import PeerClient, PeerConnectionFailed, PeerNotTrusted, PeerResponse
from .positions import may_stand, position_of
from .standing import Standing
from .takeover import Takeover
from .term_history import TermHistory

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Elected:
    """This node put the leader key: what its promotion starts from."""

    term: int
    lease: Lease
    sent: float  # when the lease's grant was sent: the fence counts from there
    in_sync: frozenset[str]
    previous: str | None  # the leader whose key this node saw go, if any


class FollowerRole:
    def __init__(self, standing: Standing, settings: BrokerSettings, members: dict[str, str], address: ClusterAddress,
                 etcd: EtcdClient, http: PeerClient, claims: LeaderClaims, takeover: Takeover, history: TermHistory,
                 store: Callable[[], MessageStore], clock: Callable[[], float],
                 begin_at: Callable[[int, Path, Mapping[str, bytes]], Awaitable[None]]) -> None:
        self._standing = standing
        self._settings = settings
        self._members = members
        self._address = address
        self._etcd = etcd
        self._http = http
        self._claims = claims
        self._takeover = takeover
        self._history = history
        self._store = store
        self._clock = clock
        self._begin_at = begin_at  # the node's services: the store reopened over a data dir begun at a log start
        self.replication = Follower(standing.node_id, store, history, http, lambda: standing.term,
                                    settings.state_snapshot_interval)
        self._following: tuple[str, int] | None = None
        self._follow_task: asyncio.Task | None = None
        http.on_answer.append(self._answered)

    async def tick(self) -> Elected | None:
        """Follow the leader the key names, or stand for election; what this node won, if it did."""
        standing = self._standing
        kv = await self._etcd.get(self._address.key("leader"))
        claim = self._claims.judge(kv)
        if kv is not None and claim is Claim.FOREIGN:
            await self._claims.ignore(kv)  # keep following whom we follow; no term from it
            return None
        if kv is not None:
            info = kv.json()
            standing.term = max(standing.term, kv.mod_revision)
            if claim is Claim.OWN:
                # our own key from before a restart: nobody serves it, so hand it over now rather than after the TTL
                log.warning("node %s: revoking the lease of its own leader key from an earlier run", standing.node_id)
                await self._etcd.revoke(kv.lease)
                return None
            standing.leader = info
            self._takeover.leader_known(kv.mod_revision, info["node_id"])
            await self.follow(info["url"], kv.mod_revision)
            return None
        previous = standing.leader["node_id"] if standing.leader else None  # its lease expired: dead or cut off
        standing.leader = None
        self._takeover.leader_gone()
        return await self._stand(previous)

    async def _stand(self, previous: str | None) -> Elected | None:
        """Stand for election if this node may: in sync, and no answering member ahead of it."""
        standing, key, in_sync_key = self._standing, self._address.key("leader"), self._address.key("in-sync")
        in_sync_kv = await self._etcd.get(in_sync_key)
        in_sync = frozenset(in_sync_kv.json()) if in_sync_kv else None
        if not may_campaign(standing.node_id, in_sync):
            return None
        own = position_of(standing.node_id, standing.term, self._history, self._store())
        if not await may_stand(own, self._http, self._members, in_sync, self._settings.cluster_size):
            return None
        sent = self._clock()
        lease = await self._etcd.grant(self._settings.lease_ttl)
        term = await self._etcd.put_if(key, standing.own_claim_json(), lease.id,
                                       [absent(key), unchanged(in_sync_key, in_sync_kv.mod_revision if in_sync_kv else 0)])
        if term is None:
            with contextlib.suppress(EtcdUnavailable):
                await self._etcd.revoke(lease.id)
            return None
        return Elected(term, lease, sent, in_sync or frozenset({standing.node_id}), previous)

    async def follow(self, url: str, term: int) -> None:
        """Replicate from ``url`` in ``term`` on a task of its own, unless this node already does."""
        if self._following == (url, term) and self._follow_task is not None and not self._follow_task.done():
            return
        await self.stop()
        log.info("node %s: following %s (term %d)", self._standing.node_id, url, term)
        self._following = (url, term)
        self._follow_task = asyncio.get_running_loop().create_task(self.replicate(url, term))

    async def replicate(self, url: str, term: int) -> None:
        """Replicate until it fails; a pause then, and the next tick follows again (or campaigns)."""
        try:
            await self.replication.follow(url, term)
        except asyncio.CancelledError:
            raise
        except BehindLeader:  # retention deleted what this node has not fetched: it begins at the leader's log start
            await self._catch_up(url)
        except ReplicaNotStored as exc:  # a refusing disk: the follower logs it once, not at every tick
            self.replication.stopped(exc)
            await asyncio.sleep(0.2)
        except PeerNotTrusted as exc:  # a setting to fix, not a dead leader: logged once, and in the view until it works
            self.replication.stopped(exc)
            await asyncio.sleep(0.2)
        except PeerConnectionFailed as exc:  # the connection failed: is anyone still listening there?
            self.replication.stopped(exc)
            log.info("node %s: replication from %s stopped: %r", self._standing.node_id, url, exc)
            await self._takeover.end_dead_term(url, term)
            await asyncio.sleep(0.2)
        except Exception as exc:  # noqa: BLE001 - any failure: the next tick follows again (or campaigns)
            self.replication.stopped(exc)
            log.info("node %s: replication from %s stopped: %r", self._standing.node_id, url, exc)
            await asyncio.sleep(0.2)

    async def _catch_up(self, url: str) -> None:
        """Take the leader's state snapshot, have the store begin empty at the leader's log start with it, and let the
        next tick follow from there (catch_up.py); a failure is said, and the next tick's fetch meets the same answer."""
        try:
            root = Path(self._store().config.data_dir)
            taken = await take_snapshot(self._http, url, self._standing.node_id, root)
            header = state_snapshot.header_of(taken.path)
            if header.entry_start < taken.log_start:
                raise state_snapshot.Unusable(f"it counts the log from {header.entry_start}, the leader's starts at {taken.log_start}")
            log.warning("node %s: behind the leader's log start %d; beginning there with its state snapshot (%d entries)",
                        self._standing.node_id, taken.log_start, header.entries)
            # the term history the log from there has goes in with it: a crash never splits the two
            await self._begin_at(taken.log_start, taken.path, {self._history.path.name: self._history.adopted(taken.history, taken.log_start)})
            self._history.adopt(taken.history, taken.log_start)
            self.replication.leader_high_watermark = taken.log_start
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - said; the next tick tries again
            log.error("node %s: catching up from %s's state snapshot failed: %r", self._standing.node_id, url, exc)
            await asyncio.sleep(0.2)

    async def stop(self) -> None:
        """Cancel replication and wait until it has stopped touching the store (a truncation runs in a thread)."""
        task, self._follow_task, self._following = self._follow_task, None, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    def _answered(self, response: PeerResponse) -> None:
        """The leader this node follows answered (any answer but a 5xx): the failover's clock starts at its last one."""
        if self._following is not None and response.url.startswith(self._following[0]) and response.status_code < 500:
            self._takeover.leader_answered()
