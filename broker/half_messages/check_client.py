"""The broker's side of a check-back call, with the safety a URL from a stranger needs.

No redirects, short timeouts, a capped response body, and anything but a clear
commit / rollback / unknown counts as unknown.

The calls run on one ``aiohttp.ClientSession`` per broker (the SDK's transport, as
node-to-node calls in cluster/peers.py, decision 047): made at the first check on
the running loop, closed when the checks stop; no cookie jar, no proxy from the
environment, answers never decompressed. aiohttp's errors become the few typed
ones below, and each of those one outcome, so the check-back loop speaks no HTTP
library's types.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, ClassVar, get_args

import orjson

from halfmq.aiohttp_session import LoopSession
from halfmq.broker.config import verified_tls
from halfmq.broker.observability.tracing import inject_current
from halfmq.check_signing import signed_headers
from halfmq.wire import EndState

from .check_url import CheckTarget

if TYPE_CHECKING:  # imported at the first check: a broker no producer asks to be checked back never loads it
    import aiohttp

MAX_RESPONSE_BYTES = 64 * 1024
MAX_CONNECTIONS = 32  # at most this many producers' connections open at once (the checks run 16 at a time by default)
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


class CheckCallFailed(Exception):
    """A check-back call got no answer to interpret; ``outcome`` says how it counts."""

    outcome: ClassVar[CheckOutcome] = CheckOutcome.ERROR


class CheckUnreachable(CheckCallFailed):
    """No connection was made (refused, no route, a certificate refused, no connect in time, a URL nobody can dial):
    nobody was asked, so it does not count as a check."""

    outcome = CheckOutcome.UNREACHABLE


class CheckTimedOut(CheckCallFailed):
    """The producer took the connection but gave no answer in time."""

    outcome = CheckOutcome.TIMEOUT


class CheckAnswerTooLarge(CheckCallFailed):
    """The producer's answer is over MAX_RESPONSE_BYTES: read no further."""


class CheckConnectionBroken(CheckCallFailed):
    """The producer closed the connection before its answer was whole, or answered something that is not HTTP."""


class CheckClient:
    """Dials the address a check_url was checked at and signs each request with its group's secret (if any)."""

    def __init__(self, connect_timeout: float = 1.0, read_timeout: float = 3.0, *,
                 secret_for: Callable[[str], bytes | None] = lambda group: None, ca_file: str | None = None) -> None:
        self._secret_for = secret_for
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        # a CA bundle given is read here, so a wrong path still stops the start rather than the first check
        self._tls = verified_tls(ca_file)
        self._session = LoopSession(self._new_session)

    async def check(self, url: str, payload: dict[str, Any], address: str | None = None) -> CheckAnswer:
        body = orjson.dumps(payload)
        headers = {"content-type": "application/json", "accept-encoding": "identity"}
        tls_name = None
        if address is not None:
            url, host, tls_name = CheckTarget(url, address).dial()
            headers.update(host)
        secret = self._secret_for(str(payload.get("producer_group", "")))
        if secret:
            headers.update(signed_headers(secret, body))
        inject_current(headers)  # the check-back's span, continued by the producer's check endpoint
        try:
            status, answer = await self._post(url, body, headers, tls_name)
        except CheckCallFailed as failed:
            return CheckAnswer(failed.outcome, str(failed))
        return interpret(status, answer)

    async def _post(self, url: str, body: bytes, headers: dict[str, str], tls_name: str | None) -> tuple[int, bytes]:
        """The producer's status and whole answer; a CheckCallFailed for every way there is none."""
        import aiohttp

        if not url.startswith(("http://", "https://")):  # (aiohttp's own refusal of another scheme is only in 3.10+)
            raise CheckUnreachable(f"invalid URL: {url!r} is not http(s)")
        try:
            async with self._session.get().post(url, data=body, headers=headers, allow_redirects=False,
                                           server_hostname=tls_name) as resp:
                if (resp.content_length or 0) > MAX_RESPONSE_BYTES:  # said up front: not a byte of it is read
                    raise CheckAnswerTooLarge(f"response larger than {MAX_RESPONSE_BYTES // 1024} KiB")
                answer = bytearray()
                async for chunk in resp.content.iter_chunked(16 * 1024):
                    answer += chunk
                    if len(answer) > MAX_RESPONSE_BYTES:
                        raise CheckAnswerTooLarge(f"response larger than {MAX_RESPONSE_BYTES // 1024} KiB")
                return resp.status, bytes(answer)
        except aiohttp.ClientConnectorError as exc:  # (a certificate refused too: no connection to use)
            raise CheckUnreachable(f"cannot connect: {getattr(exc, 'os_error', None) or exc}") from exc
        except aiohttp.ConnectionTimeoutError as exc:
            raise CheckUnreachable(f"no connection within {self._connect_timeout} s") from exc
        except (aiohttp.InvalidURL, ValueError, UnicodeError) as exc:  # a URL no request can be built for: nobody was asked
            raise CheckUnreachable(f"invalid URL: {exc}") from exc
        except TimeoutError as exc:  # aiohttp's read timeout, and the whole call's cap
            raise CheckTimedOut(f"no answer within {self._read_timeout} s") from exc
        except aiohttp.ClientError as exc:
            raise CheckConnectionBroken(f"{type(exc).__name__}: {exc}") from exc

    def _new_session(self) -> aiohttp.ClientSession:
        import aiohttp

        return aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=MAX_CONNECTIONS, ssl=self._tls),
            cookie_jar=aiohttp.DummyCookieJar(), auto_decompress=False, trust_env=False,
            # a connect, then each read of the answer, bounded apart; aiohttp has no write timeout, so the whole call
            # is capped at connect + write + read (a producer that never reads the request cannot hold a check)
            timeout=aiohttp.ClientTimeout(total=self._connect_timeout + 2 * self._read_timeout,
                                          sock_connect=self._connect_timeout, sock_read=self._read_timeout))

    async def aclose(self) -> None:
        await self._session.aclose()


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
