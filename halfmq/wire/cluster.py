"""A broker set: the cluster view and the replication answers a follower reads (documented; the SDK reads only a view's
role and writable, to leave a hung leader)."""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import Meta

from halfmq.wire.base import NonNegative, _Wire

NodeId = Annotated[str, Meta(min_length=1, max_length=200)]


class FetchRequest(_Wire, omit_defaults=True):  # a field a newer follower adds is ignored, as an answer's
    """A follower's first message on the replication stream (decision 054): it follows from ``from_offset`` (its
    appended log end).

    ``durable_offset``: its fsynced end, what votes (left out: ``from_offset``); ``high_watermark``: the follower's, a
    moved mark is pushed to it at once; ``history_term``: the last term of the leader's history it holds, sent again
    only if not this.
    """

    node_id: NodeId
    term: NonNegative
    from_offset: NonNegative
    durable_offset: NonNegative | None = None
    high_watermark: NonNegative | None = None
    history_term: NonNegative | None = None


class ClusterMember(_Wire):
    """One node as the answering node sees it; a leader adds each follower's progress."""

    node_id: str
    role: str
    url: str | None = None
    durable_offset: int | None = None
    log_end: int | None = None
    lag: int | None = None
    in_sync: bool | None = None


class LastFailover(_Wire):
    """The last change of leader this node saw: who leads since which term, after whom (None: the set's first), when (ms).

    On the node that took over, also how long it took, from the old leader's last answer to the first
    acknowledged write, and its ``phases`` (lease, election, reopen, first_ack: seconds that add up to ``seconds``).
    """

    term: int
    leader: str
    timestamp: int
    previous: str | None = None
    seconds: float | None = None
    phases: dict[str, float] | None = None


class ClusterView(_Wire):
    node_id: str
    role: str
    term: int
    writable: bool
    leader: dict[str, str] | None
    in_sync: list[str] | None  # a follower without the leader's picture does not know
    ack: Literal["quorum", "leader"]
    cluster_size: int
    etcd_error: str | None
    log_end: int
    durable_offset: int
    high_watermark: int
    nodes: list[ClusterMember]
    last_failover: LastFailover | None = None  # a node that saw none (or a broker older than the field)
    # On a follower: the leader whose picture of the set gives the other nodes' rows and the in-sync set, and its age
    # in seconds (None: on the leader, or no picture yet from the leader it follows).
    picture_from: str | None = None
    picture_age_seconds: float | None = None
    # On a follower: why replication from the leader last stopped (a certificate not trusted, a leader gone); None while
    # it streams, on the leader, or from a broker older than the field.
    replication_error: str | None = None


class TermEnd(_Wire):
    """Where a term's records end in the leader's log: a follower cuts a longer tail of that term."""

    end_offset: int
    term: int = 0  # the leader's latest term not after the one asked (KIP-279): the follower cuts where that one ends


class Position(_Wire):
    """How far a node's log is on disk, and the last term in its history: what a node standing for election compares.

    Any node answers it (GET /v1/replication/position); a later position is a
    later ``last_term``, or the same and a longer ``durable_offset``.
    """

    node_id: str
    term: int  # the highest term the node knows of
    last_term: int
    durable_offset: int

    @property
    def key(self) -> tuple[int, int]:
        return (self.last_term, self.durable_offset)
