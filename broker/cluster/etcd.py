"""A small etcd v3 client over its JSON gateway (``/v3/...``, base64 keys and values).

Why not an etcd3 gRPC package: the maintained Python ones are thin or abandoned
and pull grpcio (~10 MB) into the broker; the gateway ships in every etcd since
3.3, and the broker already has httpx (docs/decisions.md, "A replicated broker set").
Only the handful of calls leadership needs: put, range, delete, lease grant /
keep-alive / revoke, and one compare-and-put transaction.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx


class EtcdUnavailable(Exception):
    """etcd did not answer (down, partitioned, timed out): leadership cannot be proven or renewed."""


def _b64(value: str | bytes) -> str:
    raw = value.encode() if isinstance(value, str) else value
    return base64.b64encode(raw).decode()


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


class EtcdClient:
    def __init__(self, endpoint: str, timeout: float = 1.0) -> None:
        self.endpoint = endpoint.rstrip("/")
        self._http = httpx.AsyncClient(base_url=self.endpoint, timeout=timeout)

    async def _call(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        try:
            response = await self._http.post(path, json=body)
        except httpx.HTTPError as exc:
            raise EtcdUnavailable(f"etcd at {self.endpoint} did not answer {path}: {exc!r}") from None
        if response.status_code != 200:
            raise EtcdUnavailable(f"etcd at {self.endpoint} answered {path} with {response.status_code}: {response.text[:200]}")
        result: dict[str, Any] = response.json()
        return result

    async def grant(self, ttl: int) -> int:
        answer = await self._call("/v3/lease/grant", {"TTL": str(ttl)})
        return int(answer["ID"])

    async def keepalive(self, lease: int) -> int:
        """Renew ``lease`` once; return the TTL etcd restarted it with (0: the lease is gone)."""
        answer = await self._call("/v3/lease/keepalive", {"ID": str(lease)})
        return int(answer.get("result", {}).get("TTL", 0))

    async def revoke(self, lease: int) -> None:
        await self._call("/v3/lease/revoke", {"ID": str(lease)})

    async def put(self, key: str, value: str | bytes, lease: int = 0) -> int:
        body: dict[str, Any] = {"key": _b64(key), "value": _b64(value)}
        if lease:
            body["lease"] = str(lease)
        answer = await self._call("/v3/kv/put", body)
        return int(answer["header"]["revision"])

    async def get(self, key: str) -> KeyValue | None:
        answer = await self._call("/v3/kv/range", {"key": _b64(key)})
        kvs = answer.get("kvs") or []
        return _kv(kvs[0]) if kvs else None

    async def get_prefix(self, prefix: str) -> list[KeyValue]:
        end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        answer = await self._call("/v3/kv/range", {"key": _b64(prefix), "range_end": _b64(end)})
        return [_kv(kv) for kv in answer.get("kvs") or []]

    async def delete(self, key: str) -> None:
        await self._call("/v3/kv/deleterange", {"key": _b64(key)})

    async def put_if(self, key: str, value: str | bytes, lease: int, compares: list[dict[str, Any]]) -> int | None:
        """Put ``key`` in one transaction iff every compare holds; the revision it made, None if a compare failed."""
        answer = await self._call("/v3/kv/txn", {
            "compare": compares,
            "success": [{"requestPut": {"key": _b64(key), "value": _b64(value), "lease": str(lease)}}],
        })
        return int(answer["header"]["revision"]) if answer.get("succeeded") else None

    async def aclose(self) -> None:
        await self._http.aclose()


def absent(key: str) -> dict[str, Any]:
    """A txn compare: ``key`` does not exist (its create revision is 0)."""
    return {"key": _b64(key), "target": "CREATE", "result": "EQUAL", "create_revision": "0"}


def unchanged(key: str, mod_revision: int) -> dict[str, Any]:
    """A txn compare: ``key`` was last written at ``mod_revision`` (0: it does not exist)."""
    return {"key": _b64(key), "target": "MOD", "result": "EQUAL", "mod_revision": str(mod_revision)}


def _kv(raw: dict[str, Any]) -> KeyValue:
    return KeyValue(_unb64(raw.get("key")).decode(), _unb64(raw.get("value")), int(raw.get("create_revision", 0)),
                    int(raw.get("mod_revision", 0)), int(raw.get("lease", 0)))
