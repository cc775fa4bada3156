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
from collections.abc import Awaitable, Callable

from .decisions import Event, LeaseFence, Role
from .etcd import EtcdClient, EtcdUnavailable, Lease
from .standing import Standing

log = logging.getLogger(__name__)


class LeaderLease:
    """The lease this node leads under (``id`` 0: none), the fence counted from its last renewal sent, and the renewals.

    ``step_down(why)`` is the node's: called with the standing's lock held, as every change of role is.
    """

    def __init__(self, standing: Standing, renewals: EtcdClient, ttl: float, step_down: Callable[[str], Awaitable[None]],
                 clock: Callable[[], float]) -> None:
        self._standing = standing
        self.renewals = renewals  # the lease's own connection: never behind the tick
        self._step_down = step_down
        self._clock = clock
        self.id = 0
        self.fence = LeaseFence.for_ttl(ttl)  # until a grant says what etcd gave
        self.renewal_sent_at: float | None = None

    def may_write(self) -> bool:
        return self.fence.may_write(self._clock(), self.renewal_sent_at)

    def granted(self, lease: Lease, sent: float) -> None:
        """Elected under ``lease``, whose grant was sent at ``sent``: the fence counts the TTL etcd granted (it raises a
        short one to its minimum)."""
        self.id, self.renewal_sent_at = lease.id, sent
        self.fence = LeaseFence.for_ttl(lease.ttl)

    def ended(self) -> None:
        self.id, self.renewal_sent_at = 0, None

    async def renew_loop(self) -> None:
        """A leader's lease renewed every TTL/8, one renewal at a time, on its own connection: never behind the tick."""
        while True:
            lease, sent = self.id, self._clock()
            if lease:  # from the grant on: a long reopen of the runtime after an election must not let the lease lapse
                try:
                    await self.renew(lease, sent)
                except Exception:
                    log.exception("node %s: renewing its lease failed", self._standing.node_id)
            await asyncio.sleep(max(0.0, sent + self.fence.renew_every - self._clock()))

    async def renew(self, lease: int, sent: float) -> None:
        try:
            ttl = await self.renewals.keepalive(lease)
        except EtcdUnavailable as exc:
            await self.renewal_failed(lease, str(exc))
            return
        if lease != self.id:
            return  # stepped down (or elected again) meanwhile
        if ttl <= 0:
            async with self._standing.lock:
                if lease == self.id and self._standing.role is not Role.FOLLOWER:
                    await self._step_down("the lease expired in etcd")
            return
        self.renewal_sent_at = max(sent, self.renewal_sent_at or sent)
        self._standing.change(Event.RENEWED)

    async def renewal_failed(self, lease: int, why: str) -> None:
        """etcd did not answer: a leader past its fence takes no write and steps down now, not when the lease may end."""
        async with self._standing.lock:
            if self._standing.role is Role.FOLLOWER or not lease or lease != self.id:
                return
            if self.fence.gives_up(self._clock(), self.renewal_sent_at):
                self._standing.change(Event.RENEWAL_OVERDUE)
                await self._step_down(f"its lease could not be renewed before the fence ({why})")
