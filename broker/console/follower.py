"""The console on a node that does not lead its broker set: its read-only pages under a banner, a page naming the leader for the rest.

The pages a follower has the data of (pages.py marks them ``on_follower``: the topics, up to
the leader's high watermark, and the Broker set) render with a banner that says this node is a
follower and links to the leader's console, where the actions are. Every other page and every
action answers a readable page that names the leader, not the API's 421 JSON. A page rather than
a redirect: the session cookie does not follow the operator to another origin, mid-election there
is no leader to go to, and the operator should know which node they are looking at. An API client
(any path outside ``/console``) gets the 421 problem+json (broker/runtime/leader_gate.py).
"""

from __future__ import annotations

from html import escape
from typing import Any
from urllib.parse import quote

NO_FRAMING = {"content-security-policy": "frame-ancestors 'none'", "x-frame-options": "DENY"}
PREFIX = "/console"
RETRY_SECONDS = 2


def is_console(path: str) -> bool:
    return path == PREFIX or path.startswith(PREFIX + "/")


def _leader_page(leader_url: str | None, path: str) -> str | None:
    """``path`` on the leader's console; None when no leader is known or its URL is not http(s) (never a ``javascript:`` link)."""
    return leader_url.rstrip("/") + quote(path, safe="/") if leader_url and leader_url.startswith(("http://", "https://")) else None


def follower_banner(state: Any, path: str) -> str | None:
    """On a node that does not lead: the banner's HTML (escaped here), naming the leader's console at ``path``; else None."""
    node = getattr(state, "cluster", None)
    if node is None or node.writable:
        return None
    leader_url = node.not_leader().extra.get("leader_url")
    there = _leader_page(leader_url, path)
    where = (f'<a id="leader" href="{escape(there)}">{escape(leader_url or "")}</a>' if there
             else "not known yet (an election may be under way)")
    return (f'<p class="flash" id="follower">This node is a follower: it shows what the leader has acknowledged, '
            f"and actions go to the leader, {where}.</p>")


def not_leader_page(path: str, leader_url: str | None, detail: str) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    """The page and its headers (text/html, the leader's console in ``location``, ``hx-refresh`` so a polled fragment reloads)."""
    there = _leader_page(leader_url, path)
    if there:
        go = f'<p>The leader is at <a id="leader" href="{escape(there)}">{escape(leader_url or "")}</a>: its console serves this page.</p>'
    else:
        go = f"<p>No leader is known yet (an election may be under way): this page retries every {RETRY_SECONDS} s.</p>"
    retry = "" if there else f'<meta http-equiv="refresh" content="{RETRY_SECONDS}">'
    page = (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">{retry}<title>halfmq · not the leader</title>'
            '<link rel="stylesheet" href="/console/static/console.css"></head>\n'
            f'<body><main><h1>This node does not lead the broker set</h1><p class="flash">{escape(detail)}</p>\n{go}\n'
            '<p><a href="/console/cluster">This node\'s view of the set</a></p></main></body></html>\n')
    body = page.encode()
    headers = [(b"content-type", b"text/html; charset=utf-8"), (b"content-length", str(len(body)).encode()), (b"hx-refresh", b"true"),
               *((k.encode(), v.encode()) for k, v in NO_FRAMING.items())]
    if there:
        headers.append((b"location", there.encode()))
    return body, headers
