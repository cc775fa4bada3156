"""A small etcd v3 client over its JSON gateway (``/v3/...``, base64 keys and values).

Why not an etcd3 gRPC package: the maintained Python ones are thin or abandoned
and pull grpcio (~10 MB) into the broker; the gateway ships in every etcd since
3.3, and the broker already has httpx (docs/decisions/027-replicated-broker-set.md).
Only the handful of calls leadership needs: put, range, delete, lease grant /
keep-alive / revoke, compare-and-put / compare-and-delete transactions, and a
watch of one key (``POST /v3/watch``, one JSON result per line of a streamed
answer; etcd 3.4's gateway serves it as 3.5's does).

With credentials the client authenticates (``/v3/auth/authenticate``) and sends
the token etcd gave it with every call; when etcd says the token is invalid
(expired, or etcd restarted and forgot it) it authenticates again once and
repeats the call. ``secure`` (etcd_auth.py) sets the users and roles up.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from enum import Enum
from typing import Any
from urllib.parse import urlsplit

import httpx

# the client's errors, kept where their users import them from; apart so that naming them alone loads no httpx
from .etcd_errors import EtcdRefused as EtcdRefused
from .etcd_errors import EtcdUnavailable as EtcdUnavailable

log = logging.getLogger(__name__)

AUTH_NOT_ENABLED = "authentication is not enabled"
NO_USER = "user name is empty"  # etcd has auth on and the call came without a token
INVALID_TOKEN = "invalid auth token"  # etcd forgot the token (restarted) or it expired




@dataclass(frozen=True)
class EtcdCredentials:
    user: str
    password: str = field(repr=False)


def _b64(value: str | bytes) -> str:
    raw = value.encode() if isinstance(value, str) else value
    return base64.b64encode(raw).decode()


def prefix_range(prefix: str) -> dict[str, str]:
    """etcd's ``key``/``range_end`` pair for every key under ``prefix`` (the end is the prefix with its last byte + 1)."""
    return {"key": _b64(prefix), "range_end": _b64(prefix[:-1] + chr(ord(prefix[-1]) + 1))}


def _unb64(value: str | None) -> bytes:
    return base64.b64decode(value) if value else b""


@dataclass(frozen=True)
class ClusterAddress:
    """``etcd://HOST:PORT/PREFIX`` split into the gateway's base URL and the key prefix of one broker set."""

    endpoint: str
    prefix: str

    @classmethod
    def parse(cls, url: str) -> ClusterAddress:
        parts = urlsplit(url)
        if parts.scheme not in ("etcd", "etcds") or not parts.hostname:
            raise ValueError(f"cluster address {url!r} is not etcd://HOST:PORT/PREFIX")
        prefix = parts.path.strip("/") or "halfmq"
        scheme = "https" if parts.scheme == "etcds" else "http"
        return cls(f"{scheme}://{parts.hostname}:{parts.port or 2379}", f"/{prefix}")

    def key(self, *names: str) -> str:
        return "/".join((self.prefix, *names))


@dataclass(frozen=True)
class KeyValue:
    key: str
    value: bytes
    create_revision: int
    mod_revision: int
    lease: int

    def json(self) -> Any:
        return json.loads(self.value)


@dataclass(frozen=True)
class Lease:
    id: int
    ttl: int  # what etcd granted: it raises a shorter request to its minimum (1.5 election timeouts, 2 s by default)


class WatchKind(str, Enum):
    PUT = "PUT"
    DELETE = "DELETE"
    COMPACTED = "COMPACTED"  # events were compacted away before they could be read: read the key again


@dataclass(frozen=True)
class WatchEvent:
    kind: WatchKind
    revision: int
    kv: KeyValue | None = None  # the key as written (PUT) or its key and revision (DELETE)


AUTHENTICATE_SECONDS = 10.0
"""How long a login may take. etcd checks the password with bcrypt (cost 10, tens of ms of CPU), which on a loaded
machine outlasts the short timeout of lease calls; a login that gave up then could never succeed, every tick asking
again and adding to the load. Waiting longer is safe: the lease fence, not this call, decides whether a leader writes."""


class EtcdClient:
    def __init__(self, endpoint: str, timeout: float = 1.0, credentials: EtcdCredentials | None = None) -> None:
        self.endpoint = endpoint.rstrip("/")
        self.credentials = credentials
        self.timeout = timeout
        self._http = httpx.AsyncClient(base_url=self.endpoint, timeout=timeout)
        self._token: str | None = None
        self._auth_off = False  # etcd said it has no auth on: calls go without a token
        self._auth_lock = asyncio.Lock()

    async def call(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST one gateway call, with a token when the client has credentials; a stale token is renewed once."""
        used = await self._token_for_call()
        try:
            return await self._post(path, body, used)
        except EtcdRefused as exc:
            if self.credentials is None or not (exc.status == 401 or NO_USER in exc.etcd_message):
                raise
        self._forget_token(used)
        return await self._post(path, body, await self._token_for_call())

    async def _post(self, path: str, body: dict[str, Any], token: str | None, wait_s: float | None = None) -> dict[str, Any]:
        try:
            response = await self._http.post(path, json=body, headers={"authorization": token} if token else None,
                                             timeout=wait_s or self.timeout)
        except httpx.HTTPError as exc:
            raise EtcdUnavailable(f"etcd at {self.endpoint} did not answer {path}: {exc!r}") from None
        if response.status_code in (400, 401, 403, 412):
            message = _etcd_message(response)
            raise EtcdRefused(f"etcd at {self.endpoint} refused {path} ({response.status_code}): {message}", response.status_code, message)
        if response.status_code != 200:
            raise EtcdUnavailable(f"etcd at {self.endpoint} answered {path} with {response.status_code}: {response.text[:200]}")
        result: dict[str, Any] = response.json()
        return result

    async def _token_for_call(self) -> str | None:
        if self.credentials is None or self._auth_off:
            return None
        async with self._auth_lock:  # concurrent calls share one authentication
            if self._token is None and not self._auth_off:
                self._token = await self.authenticate(self.credentials)
            return self._token

    def _forget_token(self, used: str | None) -> None:
        if self._token == used:
            self._token = None
        self._auth_off = False  # etcd may have turned auth on since

    async def authenticate(self, credentials: EtcdCredentials, warn_if_off: bool = True) -> str | None:
        """A token for ``credentials``; None if etcd has no auth on (logged once: anyone may write it)."""
        try:
            answer = await self._post("/v3/auth/authenticate", {"name": credentials.user, "password": credentials.password}, None,
                                      wait_s=max(self.timeout, AUTHENTICATE_SECONDS))
        except EtcdRefused as exc:
            if AUTH_NOT_ENABLED not in exc.etcd_message:
                raise
            if warn_if_off and not self._auth_off:
                log.warning("etcd at %s has no authentication on: anyone who reaches it can change the broker set's keys", self.endpoint)
            self._auth_off = True
            return None
        return str(answer["token"])

    async def grant(self, ttl: int) -> Lease:
        """A new lease; its TTL is etcd's answer, which may be longer than ``ttl`` (never shorter)."""
        answer = await self.call("/v3/lease/grant", {"TTL": str(ttl)})
        return Lease(int(answer["ID"]), int(answer.get("TTL", ttl)))

    async def keepalive(self, lease: int) -> int:
        """Renew ``lease`` once; return the TTL etcd restarted it with (0: the lease is gone)."""
        answer = await self.call("/v3/lease/keepalive", {"ID": str(lease)})
        return int(answer.get("result", {}).get("TTL", 0))

    async def revoke(self, lease: int) -> None:
        await self.call("/v3/lease/revoke", {"ID": str(lease)})

    async def put(self, key: str, value: str | bytes, lease: int = 0) -> int:
        body: dict[str, Any] = {"key": _b64(key), "value": _b64(value)}
        if lease:
            body["lease"] = str(lease)
        answer = await self.call("/v3/kv/put", body)
        return int(answer["header"]["revision"])

    async def get(self, key: str) -> KeyValue | None:
        answer = await self.call("/v3/kv/range", {"key": _b64(key)})
        kvs = answer.get("kvs") or []
        return _kv(kvs[0]) if kvs else None

    async def get_prefix(self, prefix: str) -> list[KeyValue]:
        answer = await self.call("/v3/kv/range", prefix_range(prefix))
        return [_kv(kv) for kv in answer.get("kvs") or []]

    async def delete(self, key: str) -> None:
        await self.call("/v3/kv/deleterange", {"key": _b64(key)})

    async def put_if(self, key: str, value: str | bytes, lease: int, compares: list[dict[str, Any]]) -> int | None:
        """Put ``key`` in one transaction iff every compare holds; the revision it made, None if a compare failed."""
        answer = await self.call("/v3/kv/txn", {
            "compare": compares,
            "success": [{"requestPut": {"key": _b64(key), "value": _b64(value), "lease": str(lease)}}],
        })
        return int(answer["header"]["revision"]) if answer.get("succeeded") else None

    async def delete_if(self, key: str, compares: list[dict[str, Any]]) -> bool:
        """Delete ``key`` in one transaction iff every compare holds; whether it did."""
        answer = await self.call("/v3/kv/txn", {"compare": compares, "success": [{"requestDeleteRange": {"key": _b64(key)}}]})
        return bool(answer.get("succeeded"))

    async def watch(self, key: str, start_revision: int = 0, idle: float = 30.0, retry: float = 0.2) -> AsyncIterator[WatchEvent]:
        """Every change of ``key`` from ``start_revision`` on (0: from now), in order, until the caller stops.

        A broken stream (etcd restarted, a refused token, ``idle`` seconds without a
        line, which bounds a half-open connection) is opened again from the revision
        after the last event seen, so no event is missed or repeated; a token etcd no
        longer knows is replaced first. If those revisions were compacted, a
        ``COMPACTED`` event says so (read the key again) and the watch goes on from
        the oldest revision etcd still has. Errors are never raised: the watch retries
        after ``retry`` seconds, doubling to 2 s.
        """
        next_revision, pause = start_revision, retry
        while True:
            token: str | None = None
            try:
                token = await self._token_for_call()
                async for result in self._watch_results(key, next_revision, token, idle):
                    pause = retry
                    events, next_revision = _watch_events(result, next_revision, f"etcd at {self.endpoint}, watch of {key}")
                    for event in events:
                        yield event
                    if events and events[-1].kind is WatchKind.COMPACTED:
                        break  # etcd cancelled this watch: open it again from the oldest revision it has
            except httpx.ReadTimeout:
                continue  # idle for ``idle`` seconds: open it again, quietly
            except EtcdRefused as exc:
                if self.credentials is not None and (INVALID_TOKEN in exc.etcd_message or NO_USER in exc.etcd_message):
                    self._forget_token(token)
                    continue
                log.warning("%s; watching again in %.1fs", exc, pause)
            except (httpx.HTTPError, EtcdUnavailable, ValueError) as exc:
                log.debug("the watch of %s at %s broke: %r; again in %.1fs", key, self.endpoint, exc, pause)
            await asyncio.sleep(pause)
            pause = min(2.0, pause * 2)

    async def _watch_results(self, key: str, start_revision: int, token: str | None, idle: float) -> AsyncIterator[dict[str, Any]]:
        request: dict[str, Any] = {"key": _b64(key)}
        if start_revision:
            request["start_revision"] = str(start_revision)
        async with self._http.stream("POST", "/v3/watch", json={"create_request": request},
                                     headers={"authorization": token} if token else None,
                                     timeout=httpx.Timeout(self.timeout, read=idle)) as response:
            if response.status_code != 200:
                await response.aread()
                message = _etcd_message(response)
                raise EtcdRefused(f"etcd at {self.endpoint} refused the watch ({response.status_code}): {message}",
                                  response.status_code, message)
            async for line in response.aiter_lines():
                if line.strip():
                    answer = json.loads(line)
                    if "error" in answer:
                        error = answer["error"]
                        message = str(error.get("message", error)) if isinstance(error, dict) else str(error)
                        raise EtcdRefused(f"etcd at {self.endpoint} broke the watch of {key}: {message}", 0, message)
                    yield answer.get("result", {})

    async def aclose(self) -> None:
        await self._http.aclose()


def absent(key: str) -> dict[str, Any]:
    """A txn compare: ``key`` does not exist (its create revision is 0)."""
    return {"key": _b64(key), "target": "CREATE", "result": "EQUAL", "create_revision": "0"}


def unchanged(key: str, mod_revision: int) -> dict[str, Any]:
    """A txn compare: ``key`` was last written at ``mod_revision`` (0: it does not exist)."""
    return {"key": _b64(key), "target": "MOD", "result": "EQUAL", "mod_revision": str(mod_revision)}


def _watch_events(result: dict[str, Any], next_revision: int, where: str) -> tuple[list[WatchEvent], int]:
    """One line of a watch stream: its events, and the revision to watch from if the stream breaks after it."""
    if result.get("canceled"):
        compacted = int(result.get("compact_revision", 0))
        if not compacted:  # a refused token, a key without permission
            reason = str(result.get("cancel_reason", ""))
            raise EtcdRefused(f"{where}: cancelled: {reason}", 401, reason)
        return [WatchEvent(WatchKind.COMPACTED, compacted)], compacted
    if result.get("created") and not next_revision:
        next_revision = int(result.get("header", {}).get("revision", 0)) + 1
    events = []
    for raw in result.get("events") or []:
        kv = _kv(raw.get("kv", {}))
        events.append(WatchEvent(WatchKind(raw.get("type", WatchKind.PUT.value)), kv.mod_revision, kv))
        next_revision = kv.mod_revision + 1
    return events, next_revision


def _etcd_message(response: httpx.Response) -> str:
    try:
        return str(response.json().get("error") or response.json().get("message") or "")
    except ValueError:
        return response.text[:200]


def _kv(raw: dict[str, Any]) -> KeyValue:
    return KeyValue(_unb64(raw.get("key")).decode(), _unb64(raw.get("value")), int(raw.get("create_revision", 0)),
                    int(raw.get("mod_revision", 0)), int(raw.get("lease", 0)))
