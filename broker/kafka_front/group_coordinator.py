"""The Kafka front's group coordinator: the waits of the rebalance protocol around group_membership.py's state machine.

A JoinGroup waits until the rebalance it joined completes (every member joined again, or the slowest member's
rebalance timeout passed); a follower's SyncGroup waits for the leader's. Only this module awaits; every decision is
the state machine's. Groups live in memory on the node that serves the Kafka front (as Kafka keeps members in its
coordinator's memory; the committed offsets are in the log): a restart makes every client join again. Empty groups are
forgotten, and the groups and members held are bounded (``kafka_max_groups``, ``kafka_max_group_members``).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable

from kafka import errors as kafka_errors

from .group_membership import GroupState, JoinAnswer, KafkaGroup, MembershipError

WAIT_SLACK_S = 0.5
"""Beyond a rebalance's own timeout, how long a JoinGroup waits before it looks again (a timer, not a decision)."""


class GroupCoordinator:
    def __init__(self, max_groups: int, max_members: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_groups = max_groups
        self.max_members = max_members
        self._clock = clock
        self.groups: dict[str, KafkaGroup] = {}
        self._joins: dict[str, dict[str, asyncio.Future[JoinAnswer]]] = {}
        self._syncs: dict[str, dict[str, asyncio.Future[bytes]]] = {}

    def now_ms(self) -> float:
        return self._clock() * 1000

    def _group(self, group_id: str) -> KafkaGroup:
        group = self.groups.get(group_id)
        if group is None:
            if len(self.groups) >= self.max_groups:
                self._forget_empty()
            if len(self.groups) >= self.max_groups:
                raise MembershipError(kafka_errors.GroupMaxSizeReachedError, f"the front holds {self.max_groups} groups (the bound)")
            group = self.groups[group_id] = KafkaGroup(group_id)
        self._expire(group)
        return group

    def _forget_empty(self) -> None:
        for gid in [gid for gid, g in self.groups.items() if g.state is GroupState.EMPTY and not self._joins.get(gid)]:
            del self.groups[gid]

    def _expire(self, group: KafkaGroup) -> None:
        if group.expire(self.now_ms()):
            self._rebalancing(group)

    def _rebalancing(self, group: KafkaGroup) -> None:
        """A rebalance started: the followers waiting for the last one's assignment learn it now."""
        for future in self._syncs.pop(group.group_id, {}).values():
            if not future.done():
                future.set_exception(MembershipError(kafka_errors.RebalanceInProgressError))

    async def join(self, group_id: str, member_id: str, client_id: str, protocol_type: str, protocols: list[tuple[str, bytes]],
                   session_timeout_ms: int, rebalance_timeout_ms: int, group_instance_id: str | None = None) -> JoinAnswer:
        group = self._group(group_id)
        if member_id and member_id not in group.members:
            raise MembershipError(kafka_errors.UnknownMemberIdError, f"{member_id!r} is not a member of {group_id!r}")
        member_id = member_id or f"{client_id or 'member'}-{uuid.uuid4()}"
        was = group.state
        group.join(member_id, protocol_type, protocols, session_timeout_ms, rebalance_timeout_ms, self.now_ms(), self.max_members,
                   client_id, group_instance_id)
        if was is not GroupState.PREPARING_REBALANCE:
            self._rebalancing(group)
        waiting = self._joins.setdefault(group_id, {})
        old = waiting.pop(member_id, None)
        if old is not None and not old.done():
            old.set_exception(MembershipError(kafka_errors.RebalanceInProgressError, "joined again on another request"))
        future = waiting[member_id] = asyncio.get_running_loop().create_future()
        while True:
            self._complete_if_ready(group)
            try:
                return await asyncio.wait_for(asyncio.shield(future), rebalance_timeout_ms / 1000 + WAIT_SLACK_S)
            except TimeoutError:
                continue

    def _complete_if_ready(self, group: KafkaGroup) -> None:
        if not group.ready(self.now_ms()):
            return
        answers = group.complete(self.now_ms())
        for mid, future in self._joins.pop(group.group_id, {}).items():
            if future.done():
                continue
            if mid in answers:
                future.set_result(answers[mid])
            else:
                future.set_exception(MembershipError(kafka_errors.UnknownMemberIdError, "dropped: it did not join in time"))

    async def sync(self, group_id: str, member_id: str, generation: int, assignments: dict[str, bytes]) -> bytes:
        group = self._group(group_id)
        assignment = group.sync(member_id, generation, assignments, self.now_ms())
        if assignment is not None:
            for mid, future in self._syncs.pop(group_id, {}).items():
                if not future.done() and mid in group.members:
                    future.set_result(group.members[mid].assignment)
            return assignment
        future = self._syncs.setdefault(group_id, {})[member_id] = asyncio.get_running_loop().create_future()
        timeout = group.members[member_id].session_timeout_ms / 1000
        try:
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            raise MembershipError(kafka_errors.RebalanceInProgressError, "the leader did not sync in time") from None

    def heartbeat(self, group_id: str, member_id: str, generation: int) -> None:
        group = self._group(group_id)
        if group.state is GroupState.PREPARING_REBALANCE:
            self._complete_if_ready(group)
        group.check(member_id, generation, self.now_ms())

    def check_txn_offset_commit(self, group_id: str, member_id: str, generation: int, group_instance_id: str | None) -> None:
        """A TxnOffsetCommit's group metadata against the group as the front holds it (a group it does not hold has no
        members; none is created for the check)."""
        group = self.groups.get(group_id)
        if group is None:
            group = KafkaGroup(group_id)
        else:
            self._expire(group)
        group.check_txn_offset_commit(member_id, generation, group_instance_id)

    def leave(self, group_id: str, member_id: str) -> None:
        group = self._group(group_id)
        group.leave(member_id, self.now_ms())
        self._rebalancing(group)
        self._complete_if_ready(group)
