"""What a node makes of the value at the leader key, and what it does about a foreign one (issue 30).

A node follows only a configured member, by id and URL (decisions.judge_leader_claim); anything
else is foreign: never followed, never sent the cluster token, warned about once per value. A
leader puts its own key back over a foreign one (leader_role.py); a follower removes one that has
stood a whole lease TTL (decisions.may_clear_foreign_claim), so the set can elect a member.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from .decisions import Claim, judge_leader_claim, may_clear_foreign_claim
from .etcd import ClusterAddress, EtcdClient, KeyValue, unchanged

log = logging.getLogger(__name__)


class LeaderClaims:
    def __init__(self, node_id: str, members: dict[str, str], address: ClusterAddress, etcd: EtcdClient, lease_ttl: float,
                 clock: Callable[[], float]) -> None:
        self._node_id = node_id
        self._members = members
        self._address = address
        self._etcd = etcd
        self._lease_ttl = lease_ttl
        self._clock = clock
        self._foreign: tuple[int, bytes] | None = None  # the foreign leader key last warned about (revision, value)
        self._foreign_since = 0.0

    def judge(self, kv: KeyValue | None) -> Claim | None:
        """Whom the leader key names (None: no key); a value that is not foreign ends the last foreign one's story."""
        if kv is None:
            self._foreign = None
            return None
        try:
            claim: object = kv.json()
        except ValueError:
            claim = None
        verdict = judge_leader_claim(claim, kv.lease, self._node_id, self._members)
        if verdict is not Claim.FOREIGN:
            self._foreign = None
        return verdict

    def warn(self, kv: KeyValue) -> None:
        """One WARNING per foreign value (a new write of it is a new value)."""
        if self._foreign == (kv.mod_revision, kv.value):
            return
        self._foreign = (kv.mod_revision, kv.value)
        self._foreign_since = self._clock()
        log.warning("node %s: ignoring the leader key in etcd: %r (revision %d, lease %d) names no member of this set %s",
                    self._node_id, kv.value[:200], kv.mod_revision, kv.lease, sorted(self._members.items()))

    async def ignore(self, kv: KeyValue) -> None:
        """A follower never follows a foreign leader key; one that stands a whole lease TTL is removed, so a member can be elected."""
        self.warn(kv)
        if may_clear_foreign_claim(self._foreign_since, self._clock(), self._lease_ttl):
            key = self._address.key("leader")
            if await self._etcd.delete_if(key, [unchanged(key, kv.mod_revision)]):
                log.warning("node %s: removed the foreign leader key (revision %d) after %ss: electing a member", self._node_id,
                            kv.mod_revision, self._lease_ttl)
