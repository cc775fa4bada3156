"""The broker set's configured members (``HALFMQ_BROKER_CLUSTER_MEMBERS``): node id -> URL, from settings, never from etcd.

Nodes follow only a leader that is one of them (decisions.judge_leader_claim), and
send the cluster token to no other address (peers.PeerClient): etcd says *who*
leads, the configuration says who *may*.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit


def parse_members(entries: Iterable[str]) -> dict[str, str]:
    """``["n1=http://a:10911", ...]`` -> ``{"n1": "http://a:10911"}``; ValueError on a malformed or repeated entry."""
    members: dict[str, str] = {}
    for entry in entries:
        node_id, sep, url = entry.partition("=")
        node_id, url = node_id.strip(), url.strip().rstrip("/")
        parts = urlsplit(url)
        if not sep or not node_id or parts.scheme not in ("http", "https") or not parts.hostname or parts.path or parts.query:
            raise ValueError(f"cluster member {entry!r} is not NODE_ID=http(s)://HOST:PORT")
        if node_id in members or url in members.values():
            raise ValueError(f"cluster member {entry!r} repeats a node id or URL")
        members[node_id] = url
    return members


def origin(url: str) -> tuple[str, str, int]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), parts.port or (443 if scheme == "https" else 80)


def is_member_url(url: str, members: dict[str, str]) -> bool:
    """True if ``url`` is on one of the members' origins (scheme, host, port): the only places a node sends its token."""
    try:
        target = origin(url)
    except ValueError:  # an unparsable port
        return False
    return any(origin(member) == target for member in members.values())
