"""Producers against a broker set: 64 sends in flight, each retried across failovers until SEND_OK.

The driver finds the leader the way the SDK does (a 421's leader_url, else the
next URL) and records which bodies were acknowledged; reading everything back
afterwards gives acknowledged-but-lost and duplicated counts.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import time
from dataclasses import dataclass, field

import httpx


@dataclass
class LoadResult:
    acknowledged: set[str] = field(default_factory=set)
    attempts: int = 0
    retried: int = 0
    statuses: collections.Counter[str] = field(default_factory=collections.Counter)


class SetLoad:
    """``numbered``: send through the SDK's AsyncProducer as a service would (every send numbered, retried across
    failovers by the SDK itself), so a send whose answer was lost is stored once; otherwise raw unnumbered HTTP."""

    def __init__(self, urls: list[str], in_flight: int = 64, topic: str = "load", numbered: bool = False) -> None:
        self.urls = urls
        self.in_flight = in_flight
        self.topic = topic
        self.result = LoadResult()
        self._leader = urls[0]
        self._stop = asyncio.Event()
        self._seq = itertools.count()
        self.numbered = numbered

    def stop(self) -> None:
        self._stop.set()

    async def run(self) -> LoadResult:
        if self.numbered:
            from halfmq import AsyncProducer

            async with AsyncProducer(",".join(self.urls), retries=200, timeout=5.0) as producer:
                await asyncio.gather(*(self._sdk_producer(producer, p) for p in range(self.in_flight)))
            return self.result
        async with httpx.AsyncClient(timeout=httpx.Timeout(10.0, connect=1.0)) as http:
            await asyncio.gather(*(self._producer(http, p) for p in range(self.in_flight)))
        return self.result

    async def _producer(self, http: httpx.AsyncClient, p: int) -> None:
        while not self._stop.is_set():
            body = f"p{p}-{next(self._seq)}"
            await self._send_until_ok(http, body)

    async def _sdk_producer(self, producer: object, p: int) -> None:
        while not self._stop.is_set():
            body = f"p{p}-{next(self._seq)}"
            self.result.attempts += 1
            try:
                sent = await producer.send(self.topic, body)  # type: ignore[attr-defined]
            except Exception as failed:  # noqa: BLE001 - counted; the body is simply not acknowledged
                self.result.statuses[type(failed).__name__] += 1
                continue
            status = sent.status.value if hasattr(sent.status, "value") else str(sent.status)
            self.result.statuses[status] += 1
            if status == "SEND_OK":
                self.result.acknowledged.add(body)

    async def _send_until_ok(self, http: httpx.AsyncClient, body: str) -> None:
        tries = 0
        while True:
            url = self._leader
            tries += 1
            self.result.attempts += 1
            if tries > 1:
                self.result.retried += 1
            try:
                answer = await http.post(f"{url}/v1/topics/{self.topic}/messages", json={"messages": [{"body": body}]})
            except httpx.HTTPError:
                self._next_url(url)
                await asyncio.sleep(0.05)
                continue
            if answer.status_code == 200:
                status = answer.json()["results"][0]["status"]
                self.result.statuses[status] += 1
                if status == "SEND_OK":
                    self.result.acknowledged.add(body)
                    return
                await asyncio.sleep(0.05)
                continue
            self.result.statuses[str(answer.status_code)] += 1
            leader = answer.json().get("leader_url") if answer.status_code == 421 else None
            if leader:
                self._leader = leader
            else:
                self._next_url(url)
            await asyncio.sleep(0.05)
            if self._stop.is_set() and tries > 200:
                return

    def _next_url(self, failed: str) -> None:
        if self._leader == failed:
            self._leader = self.urls[(self.urls.index(failed) + 1) % len(self.urls)]


def read_back(url: str, topic: str) -> collections.Counter[str]:
    """Every body in ``topic`` on ``url``, counted (a count above 1 is a duplicate)."""
    counts: collections.Counter[str] = collections.Counter()
    with httpx.Client(timeout=10) as http:
        for queue in http.get(f"{url}/v1/topics/{topic}").json()["queues"]:
            offset = queue["min_offset"]
            while offset < queue["max_offset"]:
                page = http.get(f"{url}/v1/topics/{topic}/queues/{queue['queue_id']}/messages",
                                params={"offset": offset, "max": 1000}).json()
                counts.update(m["body"] for m in page["messages"])
                offset = page["next_offset"]
    return counts


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def now() -> float:
    return time.monotonic()
