"""A leader's tick: is the leader key still its own, may it still acknowledge, and the in-sync set published.

Each step answers why the leader must step down, or None; the node steps down (node.py), so the role
changes in one place. A foreign value over the key while the lease lives is put back (a new term); a
quorum leader none of whose followers fetched for ``OUT_OF_TOUCH_TTLS`` lease TTLs gives up
(decisions.steps_down_cut_off); the in-sync set is written to etcd guarded by this term's key, and
counted only once it is there (replica_tracker.py).
"""

from __future__ import annotations

import json
import logging

from halfmq.broker.config import BrokerSettings

from .decisions import OUT_OF_TOUCH_TTLS, Claim, steps_down_cut_off
from .etcd import ClusterAddress, EtcdClient, KeyValue, unchanged
from .leader_claims import LeaderClaims
from .leader_lease import LeaderLease
from .replica_tracker import ReplicaTracker
from .standing import Standing

log = logging.getLogger(__name__)


class LeaderRole:
    def __init__(self, standing: Standing, lease: LeaderLease, settings: BrokerSettings, address: ClusterAddress, etcd: EtcdClient,
                 claims: LeaderClaims, tracker: ReplicaTracker) -> None:
        self._standing = standing
        self._lease = lease
        self._settings = settings
        self._address = address
        self._etcd = etcd
        self._claims = claims
        self._tracker = tracker

    async def tick(self) -> str | None:
        """Why this node must step down now, or None (it still leads)."""
        standing, key = self._standing, self._address.key("leader")
        kv = await self._etcd.get(key)
        if kv is not None and kv.mod_revision != standing.term and self._claims.judge(kv) is Claim.FOREIGN:
            if not await self._reclaim(kv) and self._claims.judge(await self._etcd.get(key)) is not Claim.FOREIGN:
                return "the leader key changed while putting it back over a foreign one"
            # (written over again by the foreign writer: the next tick puts it back)
        elif kv is None or kv.mod_revision != standing.term:
            return "the leader key is gone or another node's"
        window = OUT_OF_TOUCH_TTLS * self._lease.fence.ttl
        if steps_down_cut_off(self._settings.ack, len(self._tracker.in_sync), self._tracker.out_of_touch(window),
                              self._settings.cluster_size):
            return f"no majority of the set fetched in {window:.0f} s: cut off from its followers, it could acknowledge nothing"
        return await self.publish_in_sync()

    async def _reclaim(self, foreign: KeyValue) -> bool:
        """A foreign value over our leader key while our lease lives: put ours back (a new term) unless it changed again.

        No member can have been elected meanwhile (the key never went away), so this
        node still leads; its followers follow the new term, nobody follows the foreign one.
        The term history gets no entry: the same leadership keeps writing the same stretch
        of the log, so no follower has a tail to cut.
        """
        self._claims.warn(foreign)
        standing, key = self._standing, self._address.key("leader")
        term = await self._etcd.put_if(key, standing.own_claim_json(), self._lease.id, [unchanged(key, foreign.mod_revision)])
        if term is None:
            return False
        log.warning("node %s: put its leader key back over a foreign one: term %d -> %d", standing.node_id, standing.term, term)
        standing.term = term
        standing.leader = standing.own_claim()
        return True

    async def publish_in_sync(self) -> str | None:
        """Write the in-sync set to etcd if it should change, guarded by this term's leader key; then count it.
        Why this node must step down (its key changed meanwhile), or None."""
        wanted = self._tracker.wanted_in_sync()
        if wanted == self._tracker.in_sync:
            return None
        if await self._etcd.put_if(self._address.key("in-sync"), json.dumps(sorted(self._tracker.publishing(wanted))), 0,
                                   [unchanged(self._address.key("leader"), self._standing.term)]) is None:
            if self._claims.judge(await self._etcd.get(self._address.key("leader"))) is not Claim.FOREIGN:
                return "the leader key changed while publishing the in-sync set"
            return None  # a foreign value over our key: the next tick puts ours back, then publishes
        log.info("node %s: in-sync set now %s", self._standing.node_id, sorted(wanted))
        self._tracker.published(wanted)
        return None
