"""A leader's lease, renewed on a task and an etcd connection of its own (issue 32, F1).

A renewal leaves every TTL/8, one at a time, so it never waits behind the tick's
other etcd calls (reading the leader key, publishing the in-sync set). It counts
from when it was *sent*, so a slow answer never overstates the lease
(decisions.LeaseFence). The first renewal that fails past the fence makes the
leader step down, before etcd can end the lease, not when it has.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from .decisions import Event, LeaseFence, Role, next_role
from .etcd import EtcdClient, EtcdUnavailable

log = logging.getLogger(__name__)


class LeaseRenewals:
    """The renewal half of ``ClusterNode`` (a mixin: it changes the node's role through the node's own methods)."""

    node_id: str
    role: Role
    lease: int
    fence: LeaseFence
    renewal_sent_at: float | None
    renewals: EtcdClient
    _clock: Callable[[], float]
    _role_lock: asyncio.Lock

    if TYPE_CHECKING:
        async def _step_down(self, why: str) -> None: ...
        def _set_role(self, role: Role) -> None: ...

    async def _renew_loop(self) -> None:
        """A leader's lease renewed every TTL/8, one renewal at a time, on its own connection: never behind the tick."""
        while True:
            lease, sent = self.lease, self._clock()
            if lease:  # from the grant on: a long reopen of the runtime after an election must not let the lease lapse
                try:
                    await self._renew(lease, sent)
                except Exception:
                    log.exception("node %s: renewing its lease failed", self.node_id)
            await asyncio.sleep(max(0.0, sent + self.fence.renew_every - self._clock()))

    async def _renew(self, lease: int, sent: float) -> None:
        try:
            ttl = await self.renewals.keepalive(lease)
        except EtcdUnavailable as exc:
            await self._renewal_failed(lease, str(exc))
            return
        if lease != self.lease:
            return  # stepped down (or elected again) meanwhile
        if ttl <= 0:
            async with self._role_lock:
                if lease == self.lease and self.role is not Role.FOLLOWER:
                    await self._step_down("the lease expired in etcd")
            return
        self.renewal_sent_at = max(sent, self.renewal_sent_at or sent)
        self._set_role(next_role(self.role, Event.RENEWED))

    async def _renewal_failed(self, lease: int, why: str) -> None:
        """etcd did not answer: a leader past its fence takes no write and steps down now, not when the lease may end."""
        async with self._role_lock:
            if self.role is Role.FOLLOWER or not lease or lease != self.lease:
                return
            if self.fence.gives_up(self._clock(), self.renewal_sent_at):
                self._set_role(next_role(self.role, Event.RENEWAL_OVERDUE))
                await self._step_down(f"its lease could not be renewed before the fence ({why})")
