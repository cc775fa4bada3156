"""How `halfmq admin` reaches the broker: the SDK's ``AdminClient`` with the operator's token, every failure one line.

The SDK's client is the CLI's (issue 43): given a set's nodes (``--broker`` or ``$HALFMQ_URL``, comma-separated)
it asks the first that answers, follows a follower's 421 to the leader and waits out an election, as a
producer does; with several nodes the CLI says which one answered (issue 45). The token is ``--token``, else
``$HALFMQ_TOKEN``, else the admin token `halfmq up` (and `halfmq admin init`) wrote beside the auth file.

Every way a call can fail ends in one line that says what to do (an operator at a terminal or a CI log
wants the fix, not a traceback), and a non-zero exit.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from halfmq.client.environment import DEFAULT_URL as DEFAULT_BROKER_URL
from halfmq.client.environment import TOKEN_ENV, URL_ENV, env_token
from halfmq.errors import BrokerError, BrokerUnavailable

if TYPE_CHECKING:  # the SDK's client (and aiohttp) load when a verb runs: `halfmq --help` stays quick
    from halfmq.client.admin import AdminClient

BROKER_URL_ENV = URL_ENV
AUTH_FILE_ENV = "HALFMQ_BROKER_AUTH_FILE"
DEFAULT_AUTH_DIR = Path("./data/auth")  # where `halfmq up` (default --data-dir ./data) and `halfmq admin init` write the tokens
TIMEOUT = 10.0  # seconds one node has to answer

__all__ = ["BROKER_URL_ENV", "DEFAULT_BROKER_URL", "TOKEN_ENV", "admin_token", "call", "failure", "refusal", "unreachable"]


def admin_token(given: str | None, environ: Mapping[str, str] | None = None) -> tuple[str | None, Path | None]:
    """The token to send and the file it was read from (None when given or from the environment, or none found).

    ``given`` (``--token``), else ``$HALFMQ_TOKEN``, else ``admin.token`` beside the auth file
    (``$HALFMQ_BROKER_AUTH_FILE``'s folder, else ./data/auth): what `halfmq up` and `halfmq admin init` wrote.
    """
    env = os.environ if environ is None else environ
    token = given or env_token(env)
    if token:
        return token, None
    auth_file = env.get(AUTH_FILE_ENV)
    path = (Path(auth_file).parent if auth_file else DEFAULT_AUTH_DIR) / "admin.token"
    try:
        return path.read_text().strip() or None, path
    except OSError:  # none there (or unreadable): no token, and a 401 says how to pass one
        return None, None


def call(args: argparse.Namespace, do: Callable[[AdminClient, argparse.Namespace], Any]) -> Any:
    """``do`` with an ``AdminClient`` on ``--broker`` (or ``$HALFMQ_URL``); its answer, else a one-line exit.

    With several nodes given, which one answered goes to stderr (stdout stays the table or the JSON).
    """
    from halfmq.client.admin import AdminClient

    token, token_file = admin_token(args.token)
    try:
        # One attempt per call: the client walks the set and waits out an election itself; a person repeats the rest.
        admin = AdminClient(args.broker, token=token, timeout=TIMEOUT, retries=0)
    except ValueError as error:  # a URL without http(s)://: the SDK's message names the fix
        raise SystemExit(str(error)) from None
    with admin:
        try:
            answer = do(admin, args)
        except BrokerError as error:
            raise SystemExit(failure(error, admin.urls, admin.answered_by, token_file)) from None
    if len(admin.urls) > 1:
        print(f"answered by {admin.answered_by}", file=sys.stderr)
    return answer


def failure(error: BrokerError, urls: list[str], answered_by: str | None = None, token_file: Path | None = None) -> str:
    """The one line for ``error``: nobody reached, nobody answered in time, or a node's refusal (naming it in a set)."""
    if isinstance(error, BrokerUnavailable):
        if not error.sent:
            return unreachable(urls if len(urls) > 1 else urls[0], error.cause or error)
        return f"{error.detail}: it may have been done; look before you repeat it"
    line = refusal(error, urls, token_file)
    return f"{line} [answered by {answered_by}]" if len(urls) > 1 and answered_by else line


def unreachable(url: str | list[str], error: BaseException) -> str:
    """The one line for a broker (or every node of a set) that did not answer at all."""
    from halfmq.client.transport import failure_reason

    where = f"the broker at {url}" if isinstance(url, str) else f"any node of the set ({', '.join(url)})"
    return (f"cannot reach {where} ({failure_reason(error)}): start one (`halfmq up`), "
            f"or point --broker or ${URL_ENV} at a running one")


def refusal(error: BrokerError, urls: list[str] | None = None, token_file: Path | None = None) -> str:
    """The one line for a broker that answered with an error: its problem code, its detail, and the fix if we know it."""
    text = error.detail if error.code == BrokerError.code else f"{error.code}: {error.detail}"  # (an answer not in problem+json)
    return f"broker refused: {text}{_hint(error, urls or [], token_file)}"


def _hint(error: BrokerError, urls: list[str], token_file: Path | None) -> str:
    if error.status == 401:
        refused = f"the admin token in {token_file} was refused: " if token_file else ""
        return (f" ({refused}pass --token or set ${TOKEN_ENV}; "
                "`halfmq admin tokens create admin --auth-file FILE` makes one)")
    if error.status == 403:
        return " (this token's principal may not do that: use an admin token)"
    if error.status == 421:
        leader = str(error.extra.get("leader_url") or "").rstrip("/")
        if not leader:
            return " (the set has no leader now: an election takes a few seconds, try again)"
        if leader not in urls:  # (a token goes only to a URL the operator gave)
            named = "" if leader in error.detail else f"the leader is {leader}: "
            return f" ({named}list every node of the set in --broker or ${URL_ENV}, comma-separated, and the CLI follows the leader)"
    return ""
