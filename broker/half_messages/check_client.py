"""The broker's side of a check-back call, with the safety a URL from a stranger needs.

No redirects, short timeouts, a capped response body, and anything but a clear
commit / rollback / unknown counts as unknown.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, get_args

import orjson

from halfmq.broker.observability.tracing import inject_current
from halfmq.check_signing import signed_headers
from halfmq.wire import EndState

from .check_url import CheckTarget

if TYPE_CHECKING:  # imported at the first check: httpx loads click, rich and pygments for its own CLI
    import httpx

MAX_RESPONSE_BYTES = 64 * 1024
ANSWERS: tuple[str, ...] = get_args(EndState)  # a tuple: a JSON list or object as the answer is unhashable


class CheckOutcome(str, Enum):
    COMMIT = "commit"
    ROLLBACK = "rollback"
    UNKNOWN = "unknown"
    DEFERRED = "deferred"  # 202: the producer will end the transaction itself
    ERROR = "error"  # reached, but answered badly (5xx, garbage, too large)
    TIMEOUT = "timeout"  # reached, but no answer in time
    UNREACHABLE = "unreachable"  # could not connect: does not count as a check


@dataclass(frozen=True)
class CheckAnswer:
    outcome: CheckOutcome
    detail: str = ""

    @property
    def reached(self) -> bool:
        return self.outcome is not CheckOutcome.UNREACHABLE


class CheckClient:
    """Dials the address a check_url was checked at and signs each request with its group's secret (if any)."""

    def __init__(self, connect_timeout: float = 1.0, read_timeout: float = 3.0, *,
                 secret_for: Callable[[str], bytes | None] = lambda group: None, ca_file: str | None = None) -> None:
        self._secret_for = secret_for
        self._timeouts = (connect_timeout, read_timeout)
        # a CA bundle given is read here, so a wrong path still stops the start rather than the first check
        self._verify: ssl.SSLContext | bool = ssl.create_default_context(cafile=ca_file) if ca_file else True
        self._client: httpx.AsyncClient | None = None

    def _http(self) -> httpx.AsyncClient:
        """The HTTP client, made at the first check: building it loads httpcore and a TLS context (about half a second
        on a loaded machine), which a broker's start, and a broker no producer ever asks to check back, need not pay."""
        if self._client is None:
            import httpx

            connect_timeout, read_timeout = self._timeouts
            self._client = httpx.AsyncClient(
                follow_redirects=False,
                timeout=httpx.Timeout(read_timeout, connect=connect_timeout),
                limits=httpx.Limits(max_connections=32, max_keepalive_connections=8),
                trust_env=False,
                verify=self._verify,
            )
        return self._client

    async def check(self, url: str, payload: dict[str, Any], address: str | None = None) -> CheckAnswer:
        body = orjson.dumps(payload)
        headers = {"content-type": "application/json"}
        extensions: dict[str, Any] = {}
        if address is not None:
            url, host, extensions = CheckTarget(url, address).dial()
            headers.update(host)
        secret = self._secret_for(str(payload.get("producer_group", "")))
        if secret:
            headers.update(signed_headers(secret, body))
        inject_current(headers)  # the check-back's span, continued by the producer's check endpoint
        client = self._http()
        import httpx  # loaded by _http

        try:
            async with client.stream("POST", url, content=body, headers=headers, extensions=extensions) as resp:
                body = b""
                async for chunk in resp.aiter_bytes():
                    body += chunk
                    if len(body) > MAX_RESPONSE_BYTES:
                        return CheckAnswer(CheckOutcome.ERROR, "response larger than 64 KiB")
                return interpret(resp.status_code, body)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            return CheckAnswer(CheckOutcome.UNREACHABLE, type(exc).__name__)
        except (httpx.InvalidURL, UnicodeError) as exc:  # a URL no request can be built for: nobody was asked
            return CheckAnswer(CheckOutcome.UNREACHABLE, f"invalid URL: {exc}")
        except httpx.TimeoutException as exc:
            return CheckAnswer(CheckOutcome.TIMEOUT, type(exc).__name__)
        except httpx.HTTPError as exc:
            return CheckAnswer(CheckOutcome.ERROR, f"{type(exc).__name__}: {exc}")

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()


def interpret(status: int, body: bytes) -> CheckAnswer:
    """Map a producer's HTTP answer to an outcome; only a 200 with a known state decides anything."""
    if status == 202:
        return CheckAnswer(CheckOutcome.DEFERRED)
    if status != 200:
        return CheckAnswer(CheckOutcome.ERROR, f"HTTP {status}")
    try:
        state = orjson.loads(body).get("state")
    except (orjson.JSONDecodeError, AttributeError):
        return CheckAnswer(CheckOutcome.ERROR, "body is not a JSON object")
    if state in ANSWERS:
        return CheckAnswer(CheckOutcome(state))
    return CheckAnswer(CheckOutcome.UNKNOWN, f"unrecognised state {state!r}")
