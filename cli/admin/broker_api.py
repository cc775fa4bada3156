"""The operator's HTTP calls to one broker: bearer token, problem+json turned into a one-line exit.

Every way a call can fail ends in one line that says what to do (an operator at a
terminal or a CI log wants the fix, not httpx's 50-line traceback), and a non-zero exit.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from halfmq.client.environment import DEFAULT_URL as DEFAULT_BROKER_URL
from halfmq.client.environment import TOKEN_ENV, URL_ENV, env_token, resolve_url

BROKER_URL_ENV = URL_ENV

__all__ = ["BROKER_URL_ENV", "DEFAULT_BROKER_URL", "TOKEN_ENV", "BrokerApi", "seg"]


class BrokerApi:
    def __init__(self, url: str | None = None, token: str | None = None, timeout: float = 10.0) -> None:
        import httpx  # here, not at import: `halfmq --help` stays quick

        # $HALFMQ_URL may list a broker set: ask the first node.
        self.url = resolve_url(url).split(",")[0].strip().rstrip("/")
        token = token or env_token()
        headers = {"authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout)

    def get(self, path: str, **params: Any) -> Any:
        return self._answer(self._call("GET", path, params={k: v for k, v in params.items() if v is not None}))

    def post(self, path: str, body: Any = None) -> Any:
        return self._answer(self._call("POST", path, **({"json": body} if body is not None else {})))

    def get_or_none(self, path: str) -> Any:
        """The answer, or None when the broker has no such route (404): e.g. GET /v1/cluster on a single node."""
        response = self._call("GET", path)
        return None if response.status_code == 404 else self._answer(response)

    def _call(self, method: str, path: str, **options: Any) -> Any:
        import httpx

        try:
            return self._http.request(method, path, **options)
        except httpx.TransportError as error:  # refused, reset, timed out, bad name: the broker was not reached
            raise SystemExit(unreachable(self.url, error)) from None

    @staticmethod
    def _answer(response: Any) -> Any:
        if response.status_code >= 400:
            raise SystemExit(refusal(response.status_code, response.content))
        return response.json() if response.content else None


def unreachable(url: str, error: BaseException) -> str:
    """The one line for a broker that did not answer at all."""
    reason = str(error) or type(error).__name__
    return (f"cannot reach the broker at {url} ({reason}): start one (`halfmq up`), "
            f"or point --broker or ${URL_ENV} at a running one")


def refusal(status: int, content: bytes) -> str:
    """The one line for a broker that answered with an error: its problem code, its detail, and the fix if we know it."""
    try:
        problem = json.loads(content)
        text = f"{problem.get('code', status)}: {problem.get('detail') or problem.get('title')}"
    except ValueError:
        text = f"HTTP {status}: {content[:200].decode(errors='replace')}"
    hint = {401: f" (pass --token or set ${TOKEN_ENV}; `halfmq admin tokens create admin --auth-file FILE` makes one)",
            403: " (this token's principal may not do that: use an admin token)"}.get(status, "")
    return f"broker refused: {text}{hint}"


def seg(value: str | int) -> str:
    """A path segment, escaped (a transaction id or group name is never a path)."""
    return quote(str(value), safe="")
