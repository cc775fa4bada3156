"""Tiny raw-HTTP helpers for broker tests (deliberately not the SDK, so the API itself is pinned)."""

from __future__ import annotations

from urllib.parse import quote

import httpx


def path(*segments: str | int) -> str:
    return "/" + "/".join(quote(str(s), safe="") for s in segments)


def send(client: httpx.Client, topic: str, *bodies: str, **fields) -> list[dict]:
    resp = client.post(path("v1", "topics", topic, "messages"), json={"messages": [{"body": b, **fields} for b in bodies]})
    resp.raise_for_status()
    return resp.json()["results"]


def read_all(client: httpx.Client, topic: str, queue_id: int, page: int = 500) -> list[dict]:
    out, offset = [], 0
    while True:
        resp = client.get(path("v1", "topics", topic, "queues", queue_id, "messages"), params={"offset": offset, "max": page})
        resp.raise_for_status()
        data = resp.json()
        out.extend(data["messages"])
        if not data["messages"]:
            return out
        offset = data["next_offset"]


def receive(client: httpx.Client, group: str, topic: str, n: int = 32, invisible: float = 30, wait: float = 0) -> list[dict]:
    resp = client.post(
        path("v1", "consumer-groups", group, "topics", topic, "receive"),
        json={"max_messages": n, "invisible_seconds": invisible, "wait_seconds": wait},
        timeout=wait + 10,
    )
    resp.raise_for_status()
    return resp.json()["messages"]


def settle(client: httpx.Client, verb: str, group: str, topic: str, handles: list[str]) -> list[str]:
    resp = client.post(path("v1", "consumer-groups", group, "topics", topic, verb), json={"receipt_handles": handles})
    resp.raise_for_status()
    return [r["status"] for r in resp.json()["results"]]


def group_state(client: httpx.Client, group: str) -> dict:
    resp = client.get(path("v1", "consumer-groups", group))
    resp.raise_for_status()
    return {t["topic"]: t["queues"] for t in resp.json()["topics"]}
