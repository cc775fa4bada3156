"""A Kafka consumer group's membership (the classic rebalance protocol: JoinGroup, SyncGroup, Heartbeat, LeaveGroup),
as a state machine under an injected clock: no I/O, no asyncio (group_coordinator.py waits on it).

The broker only gathers and hands out: the members join with the assignors they know, the first member is the leader
and computes the assignment on its side (Kafka's clients do), the leader's SyncGroup hands each member its part. A
join or a leave while the group is settled starts a rebalance: the others learn it from their next heartbeat
(REBALANCE_IN_PROGRESS) and join again; the rebalance completes when every member has joined again, or when the
slowest member's rebalance timeout passed (those that did not join are dropped). A member not heard from within its
session timeout is dropped the same way. Committed offsets are not here: they are the consumer groups' offsets every
front shares (usecases.groups).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from kafka import errors as kafka_errors


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"


class GroupEvent(enum.Enum):
    JOIN = "join"
    ALL_JOINED = "all joined"  # or the rebalance timeout passed with at least one member joined
    LEADER_SYNCED = "leader synced"
    MEMBER_GONE = "member gone"  # left, or its session timed out, with others left
    LAST_GONE = "last member gone"


TRANSITIONS: dict[tuple[GroupState, GroupEvent], GroupState] = {
    (GroupState.EMPTY, GroupEvent.JOIN): GroupState.PREPARING_REBALANCE,
    (GroupState.PREPARING_REBALANCE, GroupEvent.JOIN): GroupState.PREPARING_REBALANCE,
    (GroupState.COMPLETING_REBALANCE, GroupEvent.JOIN): GroupState.PREPARING_REBALANCE,
    (GroupState.STABLE, GroupEvent.JOIN): GroupState.PREPARING_REBALANCE,
    (GroupState.PREPARING_REBALANCE, GroupEvent.ALL_JOINED): GroupState.COMPLETING_REBALANCE,
    (GroupState.COMPLETING_REBALANCE, GroupEvent.LEADER_SYNCED): GroupState.STABLE,
    (GroupState.PREPARING_REBALANCE, GroupEvent.MEMBER_GONE): GroupState.PREPARING_REBALANCE,
    (GroupState.COMPLETING_REBALANCE, GroupEvent.MEMBER_GONE): GroupState.PREPARING_REBALANCE,
    (GroupState.STABLE, GroupEvent.MEMBER_GONE): GroupState.PREPARING_REBALANCE,
    (GroupState.PREPARING_REBALANCE, GroupEvent.LAST_GONE): GroupState.EMPTY,
    (GroupState.COMPLETING_REBALANCE, GroupEvent.LAST_GONE): GroupState.EMPTY,
    (GroupState.STABLE, GroupEvent.LAST_GONE): GroupState.EMPTY,
}
"""Every move a group makes; a pair not here leaves the state as it is (a late sync, a heartbeat)."""


class MembershipError(Exception):
    """A request the group refuses, with the Kafka error its answer carries."""

    def __init__(self, error: type[kafka_errors.BrokerResponseError], detail: str = "") -> None:
        super().__init__(detail or error.__name__)
        self.error_code = int(error.errno)


@dataclass
class Member:
    member_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocols: list[tuple[str, bytes]]
    seen_ms: float
    joined: bool = True  # in the rebalance now under way
    assignment: bytes = b""
    client_id: str = ""
    group_instance_id: str | None = None  # JoinGroup v5+'s, kept to fence a zombie's transactional offsets (KIP-447)


@dataclass(frozen=True)
class JoinAnswer:
    generation: int
    protocol_name: str
    leader: str
    member_id: str
    members: list[tuple[str, bytes]]  # the leader's answer only: each member with its metadata for the chosen protocol


@dataclass
class KafkaGroup:
    group_id: str
    protocol_type: str = ""
    state: GroupState = GroupState.EMPTY
    generation: int = 0
    leader: str = ""
    protocol_name: str = ""
    members: dict[str, Member] = field(default_factory=dict)
    rebalance_started_ms: float = 0.0

    def move(self, event: GroupEvent) -> None:
        self.state = TRANSITIONS.get((self.state, event), self.state)

    # --- joining ------------------------------------------------------------------------------------------------
    def join(self, member_id: str, protocol_type: str, protocols: list[tuple[str, bytes]], session_timeout_ms: int,
             rebalance_timeout_ms: int, now_ms: float, max_members: int, client_id: str = "", group_instance_id: str | None = None) -> None:
        """``member_id`` (new or known) joins the rebalance under way, or starts one."""
        if self.members and protocol_type != self.protocol_type:
            raise MembershipError(kafka_errors.InconsistentGroupProtocolError, f"the group's protocol type is {self.protocol_type!r}")
        if self.members and not self._common(protocols, skip=member_id):
            raise MembershipError(kafka_errors.InconsistentGroupProtocolError, "no assignor in common with the group's members")
        if member_id not in self.members and len(self.members) >= max_members:
            raise MembershipError(kafka_errors.GroupMaxSizeReachedError, f"the group holds {max_members} members (the bound)")
        if self.state is not GroupState.PREPARING_REBALANCE:
            for m in self.members.values():
                m.joined = False
            self.rebalance_started_ms = now_ms
        self.protocol_type = protocol_type
        if group_instance_id is not None:  # the newest member with a static instance id holds it: an older one is fenced
            for m in self.members.values():
                if m.group_instance_id == group_instance_id and m.member_id != member_id:
                    m.group_instance_id = None
        self.members[member_id] = Member(member_id, session_timeout_ms, rebalance_timeout_ms, protocols, now_ms, client_id=client_id,
                                         group_instance_id=group_instance_id)
        self.move(GroupEvent.JOIN)

    def _common(self, protocols: list[tuple[str, bytes]], skip: str = "") -> list[str]:
        """The assignors every member (and the joining one) knows, in the joining one's order of preference."""
        names = [name for name, _ in protocols]
        for m in self.members.values():
            if m.member_id != skip:
                known = {name for name, _ in m.protocols}
                names = [n for n in names if n in known]
        return names

    def ready(self, now_ms: float) -> bool:
        """Whether the rebalance under way can complete: every member joined again, or the slowest one's rebalance
        timeout passed."""
        if self.state is not GroupState.PREPARING_REBALANCE:
            return False
        if all(m.joined for m in self.members.values()):
            return True
        limit = max(m.rebalance_timeout_ms for m in self.members.values())
        return now_ms - self.rebalance_started_ms >= limit

    def complete(self, now_ms: float) -> dict[str, JoinAnswer]:
        """End the rebalance: drop who did not join, a new generation, the leader and the protocol; each member's answer."""
        for gone in [m for m in self.members.values() if not m.joined]:
            del self.members[gone.member_id]
        if not self.members:
            self.move(GroupEvent.LAST_GONE)
            return {}
        self.generation += 1
        if self.leader not in self.members:
            self.leader = next(iter(self.members))
        leader = self.members[self.leader]
        self.protocol_name = self._common(leader.protocols)[0]
        for m in self.members.values():
            m.assignment, m.seen_ms = b"", now_ms
        self.move(GroupEvent.ALL_JOINED)
        listed = [(m.member_id, dict(m.protocols)[self.protocol_name]) for m in self.members.values()]
        return {mid: JoinAnswer(self.generation, self.protocol_name, self.leader, mid, listed if mid == self.leader else [])
                for mid in self.members}

    # --- syncing, heartbeats, leaving ---------------------------------------------------------------------------
    def check(self, member_id: str, generation: int, now_ms: float) -> Member:
        member = self.members.get(member_id)
        if member is None:
            raise MembershipError(kafka_errors.UnknownMemberIdError, f"{member_id!r} is not a member of {self.group_id!r}")
        if self.state is GroupState.PREPARING_REBALANCE:
            raise MembershipError(kafka_errors.RebalanceInProgressError)
        if generation != self.generation:
            raise MembershipError(kafka_errors.IllegalGenerationError, f"generation {generation}, the group's is {self.generation}")
        member.seen_ms = now_ms
        return member

    def check_txn_offset_commit(self, member_id: str, generation: int, group_instance_id: str | None) -> None:
        """KIP-447: a transaction's consumed offsets carry its consumer's group metadata, and a producer whose consumer
        is no longer the group's member of this generation (a zombie after a rebalance) is refused, so its offsets
        never move: as Kafka's coordinator, FENCED_INSTANCE_ID when another member holds the static instance id,
        UNKNOWN_MEMBER_ID when the member is gone, ILLEGAL_GENERATION when the group moved on. A commit without group
        metadata (generation -1, no member: TxnOffsetCommit v0-2, a client that names only the group) is not checked."""
        if generation < 0 and not member_id and group_instance_id is None:
            return
        if group_instance_id is not None:
            holder = next((m for m in self.members.values() if m.group_instance_id == group_instance_id), None)
            if holder is not None and holder.member_id != member_id:
                raise MembershipError(kafka_errors.FencedInstanceIdError, f"instance {group_instance_id!r} is member {holder.member_id!r} now")
        if member_id not in self.members:
            raise MembershipError(kafka_errors.UnknownMemberIdError, f"{member_id!r} is not a member of {self.group_id!r}")
        if generation != self.generation:
            raise MembershipError(kafka_errors.IllegalGenerationError, f"generation {generation}, the group's is {self.generation}")

    def sync(self, member_id: str, generation: int, assignments: dict[str, bytes], now_ms: float) -> bytes | None:
        """The member's assignment, or None while the leader has not synced yet."""
        member = self.check(member_id, generation, now_ms)
        if member_id == self.leader and self.state is GroupState.COMPLETING_REBALANCE:
            for mid, m in self.members.items():
                m.assignment = assignments.get(mid, b"")
            self.move(GroupEvent.LEADER_SYNCED)
        return member.assignment if self.state is GroupState.STABLE else None

    def leave(self, member_id: str, now_ms: float) -> None:
        if member_id not in self.members:
            raise MembershipError(kafka_errors.UnknownMemberIdError, f"{member_id!r} is not a member of {self.group_id!r}")
        self._drop([member_id], now_ms)

    def expire(self, now_ms: float) -> list[str]:
        """Drop the members whose session timed out (not during a rebalance: a member waiting in JoinGroup is alive)."""
        if self.state is GroupState.PREPARING_REBALANCE:
            return []
        gone = [m.member_id for m in self.members.values() if now_ms - m.seen_ms > m.session_timeout_ms]
        if gone:
            self._drop(gone, now_ms)
        return gone

    def _drop(self, member_ids: list[str], now_ms: float) -> None:
        for mid in member_ids:
            self.members.pop(mid, None)
        if not self.members:
            self.move(GroupEvent.LAST_GONE)
            return
        if self.state is not GroupState.PREPARING_REBALANCE:
            for m in self.members.values():
                m.joined = False
            self.rebalance_started_ms = now_ms
        self.move(GroupEvent.MEMBER_GONE)
