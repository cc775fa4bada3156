"""The console on a node that does not lead its broker set: a readable page that names the leader, not the API's 421 JSON.

A page rather than a redirect: the session cookie does not follow the operator to
another origin, mid-election there is no leader to go to, and the operator should
know which node they are looking at. The Broker set page, its fragment, the login
and the static files stay served on every node, as ``/v1/cluster`` is; an API
client (any path outside ``/console``) still gets the 421 problem+json
(broker/cluster/gate.py).
"""

from __future__ import annotations

from html import escape
from urllib.parse import quote

NO_FRAMING = {"content-security-policy": "frame-ancestors 'none'", "x-frame-options": "DENY"}
PREFIX = "/console"
SERVED_ON_EVERY_NODE = ("/console/static/", "/console/login", "/console/logout", "/console/cluster")
RETRY_SECONDS = 2


def is_console(path: str) -> bool:
    return path == PREFIX or path.startswith(PREFIX + "/")


def not_leader_page(path: str, leader_url: str | None, detail: str) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    """The page and its headers (text/html, the leader's console in ``location``, ``hx-refresh`` so a polled fragment reloads)."""
    there = leader_url.rstrip("/") + quote(path, safe="/") if leader_url and leader_url.startswith(("http://", "https://")) else None
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
