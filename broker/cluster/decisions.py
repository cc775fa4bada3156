"""The broker set's decisions as pure functions of time and offsets (tested with a fake clock).

Who may write, who may stand for election, who is in sync and how far a write
is acknowledged: the node and the replication code only feed these.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from halfmq.wire.cluster import Position


class Role(str, Enum):
    FOLLOWER = "follower"
    LEADER = "leader"
    FENCED = "fenced"  # holds the leader key but could not renew in time: takes no write until it renews or steps down


class Event(str, Enum):
    ELECTED = "elected"
    RENEWAL_OVERDUE = "renewal_overdue"
    RENEWED = "renewed"
    LOST = "lost"  # the leader key is gone or someone else's


# The one transition table of a node's role; a pair not listed keeps the role.
TRANSITIONS: dict[tuple[Role, Event], Role] = {
    (Role.FOLLOWER, Event.ELECTED): Role.LEADER,
    (Role.LEADER, Event.RENEWAL_OVERDUE): Role.FENCED,
    (Role.FENCED, Event.RENEWED): Role.LEADER,
    (Role.LEADER, Event.LOST): Role.FOLLOWER,
    (Role.FENCED, Event.LOST): Role.FOLLOWER,
}


def next_role(role: Role, event: Event) -> Role:
    return TRANSITIONS.get((role, event), role)


@dataclass(frozen=True)
class LeaseFence:
    """A leader writes only while its lease surely lives, with ``margin`` seconds to spare.

    etcd restarts a lease's TTL when a keep-alive *arrives*, which is after it was
    sent; so counting from the moment the last successful renewal was sent never
    overestimates the lease's life, whatever the network delay. The margin covers
    clock-rate drift and a write that passed the check just before the deadline
    (an ack checks again). ``ttl`` is the TTL etcd granted, which may be more than
    asked for (etcd raises a grant to its minimum, 2 s with its default election timeout).
    """

    ttl: float
    margin: float

    def may_write(self, now: float, renewal_sent_at: float | None) -> bool:
        return renewal_sent_at is not None and now < renewal_sent_at + self.ttl - self.margin

    @property
    def renew_every(self) -> float:
        """A renewal leaves this often (TTL/8): several tries fit before the fence, so one slow answer fences nothing."""
        return self.ttl / 8

    def gives_up(self, now: float, renewal_sent_at: float | None) -> bool:
        """After a failed renewal: step down now if the fence has passed (the lease may end before a retry answers)."""
        return not self.may_write(now, renewal_sent_at)

    @classmethod
    def for_ttl(cls, ttl: float) -> LeaseFence:
        return cls(ttl, max(0.5, ttl * 0.25))


DEAD_LEADER_REFUSED_FOR = 0.2  # seconds of refused connections that end a dead leader's term early


def may_end_dead_term(refused_since: float | None, now: float, ack: str, refused_for: float = DEAD_LEADER_REFUSED_FOR) -> bool:
    """A follower removes the leader key (guarded by its term) once the leader's address refused connections for ``refused_for``.

    A refused connect means no process listens there: the leader is gone, so waiting
    for its lease only loses time. A stopped or cut-off leader is not refused (its
    kernel still accepts, or nothing answers), so it keeps its lease. Only with
    ``ack=quorum``: the old leader's acks then needed followers' reports, and a
    follower that removes the key no longer fetches from it; with ``ack=leader`` its
    last acks may be on its disk alone, and the lease is the only safe wait.
    """
    return ack == "quorum" and refused_since is not None and now - refused_since >= refused_for


def may_campaign(node_id: str, in_sync: frozenset[str] | None) -> bool:
    """Only an in-sync node may become leader; a set with no in-sync list yet (first start) lets anyone."""
    return in_sync is None or not in_sync or node_id in in_sync


def majority(cluster_size: int) -> int:
    return cluster_size // 2 + 1


@dataclass(frozen=True)
class FollowerProgress:
    durable: int          # the follower's fsynced log end, as it last reported it in this term: only this votes
    caught_up_at: float   # when it last fetched from where the leader's log ended at its fetch before
    fetched: int = 0      # the follower's appended log end, as its last fetch asked from
    heard_at: float = float("inf")  # when it last fetched or acked in this term (inf: not yet asked; counts as heard)


def majority_offset(leader: str, leader_durable: int, members: frozenset[str], progress: Mapping[str, FollowerProgress],
                    cluster_size: int) -> int:
    """The ``majority(cluster_size)``-th highest durable end among ``members`` (the leader's own vote included); 0 if too few."""
    ends = sorted((leader_durable if node == leader else (p.durable if (p := progress.get(node)) is not None else 0)
                   for node in members), reverse=True)
    need = majority(cluster_size)
    return ends[need - 1] if len(ends) >= need else 0


def in_sync_set(leader: str, current: frozenset[str], progress: Mapping[str, FollowerProgress], now: float, lag_time: float,
                cluster_size: int, high_watermark: int = 0, leader_durable: int = 0, acknowledged: int = 0) -> frozenset[str]:
    """The in-sync set as it should be now: the leader, and every follower caught up within ``lag_time``.

    A follower that has not caught up for longer drops out (a dead node too), so
    elections stop counting on it; one that catches up again joins, once it
    has the high watermark on disk (Kafka's rule: a member may be elected, and
    consumers have seen everything below the mark). Two things keep a member that
    would drop out: the set never shrinks below a majority (the members furthest
    along stay, sends time out instead: FLUSH_SLAVE_TIMEOUT), and a majority of
    the set must keep every ``acknowledged`` offset on disk, or the dropped node
    could be the only one left to hold an acknowledged write once the leader
    dies. Acknowledgements count only the set as published in etcd, so a node
    leaves it in etcd before anything it lacks is acknowledged.
    """
    members = {leader} | {node for node, p in progress.items()
                          if now - p.caught_up_at <= lag_time and (node in current or p.durable >= high_watermark)}
    def furthest(n: str) -> tuple[float, float]:
        p = progress.get(n)
        return (-p.durable, -p.caught_up_at) if p is not None else (1.0, float("inf"))

    lagging = sorted((n for n in current if n not in members), key=furthest)
    while lagging and (len(members) < majority(cluster_size) or majority_offset(
            leader, leader_durable, frozenset(members), progress, cluster_size) < acknowledged):
        members.add(lagging.pop(0))
    return frozenset(members)


def acknowledged_offset(leader: str, leader_durable: int, in_sync: frozenset[str], progress: Mapping[str, FollowerProgress],
                        cluster_size: int, term_start: int = 0) -> int:
    """How far a majority of the cluster, counted in the in-sync set, has the log on disk: what ``ack=quorum`` may acknowledge.

    The leader is one vote. Nothing counts until that majority has this term's
    start (``term_start``, the leader's log end when it was elected): a follower
    takes the term into its history only with the bytes that reach it, and an
    earlier term's bytes counted on replicas alone could still be cut by a
    later leader (Raft's rule: a leader commits by counting only in its own term).
    0 while no such majority exists.
    """
    offset = majority_offset(leader, leader_durable, in_sync, progress, cluster_size)
    return offset if offset >= term_start else 0


def quorum_possible(in_sync: frozenset[str], cluster_size: int) -> bool:
    return len(in_sync) >= majority(cluster_size)


def high_watermark(previous: int, leader: str, leader_durable: int, in_sync: frozenset[str],
                   progress: Mapping[str, FollowerProgress], cluster_size: int, term_start: int = 0) -> int:
    """How far consumers may read a set's log: what a majority has on disk (``acknowledged_offset``), never less than before.

    Every node that may be elected holds everything below it (``may_lead``), so no
    leader change erases what a consumer saw (Kafka's high watermark). It does not depend on the
    ack mode: an ``ack=leader`` send is acknowledged sooner, not visible sooner.
    """
    return max(previous, acknowledged_offset(leader, leader_durable, in_sync, progress, cluster_size, term_start))


def may_lead(own: Position, answers: Mapping[str, Position], in_sync: frozenset[str] | None, cluster_size: int) -> bool:
    """Whether a node may stand for election, given its own position and the ones the other members answered.

    It stands only if it and the members that answered make a majority of the
    cluster and no answering in-sync member is later than it: a later last term,
    or the same term and more on disk. An acknowledged write is on disk on a
    majority of the in-sync set, so at least one of those answers holds it, and
    a node that is not behind that one holds it too (Raft's election
    restriction). A member that does not answer (dead, stopped) only does not
    count. A set with no in-sync list yet has acknowledged nothing (a leader
    publishes one as soon as a follower catches up, and counts nothing before):
    any node stands there that no answering member is ahead of, even alone.
    """
    if not in_sync:
        return all(p.key <= own.key for p in answers.values())
    if 1 + len(answers) < majority(cluster_size):
        return False
    return all(p.key <= own.key for node, p in answers.items() if node in in_sync)


class Claim(str, Enum):
    """What a node makes of the value at the leader key."""

    MEMBER = "member"    # another configured member, under its lease: follow it
    OWN = "own"          # this node, under a lease: its own key (from an earlier run, or its current term)
    FOREIGN = "foreign"  # anything else (another URL, an unknown id, no lease, not JSON): never followed, never sent a token


def judge_leader_claim(claim: object, lease: int, node_id: str, members: Mapping[str, str]) -> Claim:
    """Whom the leader key names: a node follows only a configured member, by id *and* URL.

    Every node writes its key under a lease, so a key without one was written by
    someone else (etcd's own ``put``, a compromised writer): foreign too.
    """
    if not isinstance(claim, Mapping) or not lease:
        return Claim.FOREIGN
    claimed, url = claim.get("node_id"), claim.get("url")
    if not isinstance(claimed, str) or not isinstance(url, str) or members.get(claimed) != url.rstrip("/"):
        return Claim.FOREIGN
    return Claim.OWN if claimed == node_id else Claim.MEMBER


def may_clear_foreign_claim(seen_since: float, now: float, lease_ttl: float) -> bool:
    """A foreign leader key that has stood a whole lease TTL is removed (then the set elects a member).

    Not sooner: a live leader puts its own key back over a foreign one within a tick
    (TTL/5) and keeps leading; only when no member leads would
    the foreign key otherwise block every election forever.
    """
    return now - seen_since >= lease_ttl


OUT_OF_TOUCH_TTLS = 3  # a leader steps down after this many lease TTLs without a majority's fetches (a follower fetches every 0.5 s)


def steps_down_cut_off(ack: str, in_sync: int, cut_off: bool, cluster_size: int) -> bool:
    """Whether a leader ``cut_off`` from its followers (``out_of_touch``) gives up its lease: only with ``ack=quorum``,
    where it could acknowledge nothing (with ``ack=leader`` it still can, and its lease decides), and only once a
    majority is in sync: only an in-sync node may be elected, so with fewer, stepping down would leave the set with no
    leader at all rather than let the majority's side elect one."""
    return ack == "quorum" and in_sync >= majority(cluster_size) and cut_off


def out_of_touch(leader: str, progress: Mapping[str, FollowerProgress], now: float, window: float, cluster_size: int) -> bool:
    """Whether a leader has heard from too few followers within ``window`` to make a majority with itself (Raft's
    CheckQuorum). A leader cut off from its followers but not from etcd keeps its lease, so nobody else may lead,
    and with ``ack=quorum`` it can acknowledge nothing: it steps down instead, and the side with a majority elects."""
    heard = sum(1 for node, p in progress.items() if node != leader and now - p.heard_at <= window)
    return 1 + heard < majority(cluster_size)
