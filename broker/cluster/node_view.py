"""What ``GET /v1/cluster`` says about a node and, as far as it knows, the set: roles, term, offsets, lag, in-sync.

Apart from node.py because it only reads the node; etcd's registrations say who is there, the tracker (on a leader)
how far each follower has got.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from halfmq.broker.observability.operator_metrics import FollowerLag, SetReading

from .decisions import Role
from .etcd import EtcdUnavailable

if TYPE_CHECKING:
    from .node import ClusterNode


async def node_view(node: ClusterNode) -> dict[str, Any]:
    store = node.store
    end = store.commit_log.end_offset
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
    nodes.setdefault(node.node_id, {"node_id": node.node_id, "url": node.url})["role"] = node.role.value
    nodes[node.node_id].update({"durable_offset": store.flushed_offset, "log_end": end})
    if node.role is not Role.FOLLOWER:
        nodes[node.node_id].update({"lag": 0, "in_sync": node.node_id in node.tracker.in_sync})
        for row in node.tracker.view(end):
            nodes.setdefault(str(row["node_id"]), {"node_id": row["node_id"], "role": "follower"}).update(row)
    else:
        nodes[node.node_id]["lag"] = max(0, node.following.replication.leader_end - store.flushed_offset)
    return {
        "node_id": node.node_id, "role": node.role.value, "term": node.term, "writable": node.writable,
        "leader": leader, "in_sync": sorted(node.tracker.in_sync) if node.role is not Role.FOLLOWER else None,
        "ack": node.settings.ack, "cluster_size": node.settings.cluster_size, "etcd_error": node.etcd_error,
        "log_end": end, "durable_offset": store.flushed_offset, "high_watermark": store.visible.bound,
        "nodes": sorted(nodes.values(), key=lambda n: str(n["node_id"])), "last_failover": node.last_failover,
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
