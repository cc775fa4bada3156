"""What ``GET /v1/cluster`` says about a node and, as far as it knows, the set: roles, term, offsets, lag, in-sync.

Apart from node.py because it only reads the node; etcd's registrations say who is there, the tracker (on a leader)
how far each follower has got. A follower has no tracker: it shows the leader's picture of the set, the one the
leader last sent on its replication stream (``set_picture``, at most every ``PICTURE_EVERY`` s), and says whose it is and how
old, so the console and the CLI show one set's figures on every node (with the leader's record of its election: a follower
that saw only the set's first one has none of its own). Each node's offsets are read durable first, then
log end, after any await: a log end read before an fsync that completed meanwhile would show below "durable".
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from halfmq.broker.observability.operator_metrics import FollowerLag, SetReading

from .decisions import Role
from .etcd_errors import EtcdUnavailable

if TYPE_CHECKING:
    from .node import ClusterNode

PICTURE_EVERY = 1.0  # seconds between two pictures of the set a leader sends one follower (in a run's extras)


@dataclass(frozen=True)
class SetPicture:
    """The leader's rows of the set (``nodes``), its in-sync set and the last change of leader it saw (its own election,
    first or not), as a follower received them at ``received`` (monotonic)."""

    leader: str
    in_sync: list[str]
    nodes: list[dict[str, Any]]
    last_failover: dict[str, Any] | None
    received: float

    @classmethod
    def of(cls, data: dict[str, Any], received: float) -> SetPicture:
        return cls(str(data["leader"]), [str(n) for n in data["in_sync"]], [dict(n) for n in data["nodes"]],
                   data.get("last_failover"), received)


def picture_due(last_sent: float | None, now: float, every: float = PICTURE_EVERY) -> bool:
    """Whether a run carries the set's picture: the first to a follower, then one every ``every`` seconds."""
    return last_sent is None or now - last_sent >= every


def set_picture(node: ClusterNode) -> dict[str, Any]:
    """The leader's rows: its own (lag 0) and each follower's progress as the tracker has it, with the in-sync set."""
    durable = node.store.flushed_offset
    end = node.store.commit_log.end_offset  # after durable: an append and its fsync in between keep end >= durable
    own = {"node_id": node.node_id, "role": node.role.value, "durable_offset": durable, "log_end": end, "lag": 0,
           "in_sync": node.node_id in node.tracker.in_sync}
    return {"leader": node.node_id, "in_sync": sorted(node.tracker.in_sync), "nodes": [own, *node.tracker.view(end)],
            "last_failover": node.last_failover}


def followed_picture(node: ClusterNode) -> SetPicture | None:
    """The picture of the set the leader this follower sees last sent (None: none yet; an earlier leader's is not this
    one's)."""
    picture = node.following.replication.picture
    leader = node.standing.leader
    return picture if picture is not None and leader and picture.leader == leader.get("node_id") else None


async def node_view(node: ClusterNode, clock: Callable[[], float] = time.monotonic) -> dict[str, Any]:
    nodes: dict[str, dict[str, Any]] = {}
    try:
        for kv in await node.etcd.get_prefix(node.address.key("nodes", "")):
            info = kv.json()
            if not isinstance(info, dict) or node.members.get(cast(str, info.get("node_id"))) != info.get("url"):
                continue  # a registration that names no member is not shown
            nodes[info["node_id"]] = {"node_id": info["node_id"], "url": info["url"], "role": "follower"}
    except EtcdUnavailable:
        pass
    leader = node.standing.leader
    leader_id = leader["node_id"] if leader else None
    if leader_id in nodes:
        nodes[leader_id]["role"] = "leader"
    store = node.store
    leading = node.role is not Role.FOLLOWER
    picture = SetPicture.of(set_picture(node), clock()) if leading else followed_picture(node)
    for row in picture.nodes if picture is not None else ():
        nodes.setdefault(str(row["node_id"]), {"node_id": row["node_id"], "role": "follower"}).update(row)
    durable = store.flushed_offset
    end = store.commit_log.end_offset
    own = nodes.setdefault(node.node_id, {"node_id": node.node_id, "url": node.url})
    lag = 0 if leading else max(0, node.following.replication.leader_end - durable)
    own.update({"role": node.role.value, "durable_offset": durable, "log_end": end, "lag": lag})
    return {
        "node_id": node.node_id, "role": node.role.value, "term": node.term, "writable": node.writable,
        "leader": leader, "in_sync": picture.in_sync if picture is not None else None,
        "ack": node.settings.ack, "cluster_size": node.settings.cluster_size, "etcd_error": node.etcd_error,
        "replication_error": None if leading else node.following.replication.error,
        "log_end": end, "durable_offset": durable, "high_watermark": store.visible.bound,
        "nodes": sorted(nodes.values(), key=lambda n: str(n["node_id"])),
        "last_failover": (picture.last_failover if picture is not None else None) or node.last_failover,
        "picture_from": picture.leader if picture is not None and not leading else None,
        "picture_age_seconds": round(max(0.0, clock() - picture.received), 1) if picture is not None and not leading else None,
    }


def set_reading(node: ClusterNode) -> SetReading:
    """What /metrics says about the set on this node: read from what the node already keeps, never computed again."""
    leading = node.role is not Role.FOLLOWER
    failover = node.last_failover or {}
    followers: tuple[FollowerLag, ...] = ()
    if leading:
        durable, seconds = node.store.flushed_offset, node.tracker.lag_seconds()
        followers = tuple(FollowerLag(n, max(0, durable - p.durable), seconds[n]) for n, p in sorted(node.tracker.progress.items()))
    return SetReading(node.node_id, node.role.value, node.term, node.takeover.leader_changes, node.settings.cluster_size,
                      len(node.tracker.in_sync) if leading else None, followers,
                      failover.get("seconds") if failover.get("leader") == node.node_id and failover.get("previous") else None)
