"""Who signed a RocketMQ 5 request: the ``authorization`` metadata Apache's clients send, checked by the Access.

``MQv2-HMAC-SHA1 Credential=<access key>, SignedHeaders=x-mq-date-time, Signature=<hex>``: the
HMAC-SHA1 of the ``x-mq-date-time`` value under the secret key. The access key is a principal's
name and the secret its derived RocketMQ secret (``derive_rocketmq_secret``), so one principal and
its policies serve both fronts. A signed time more than ``MAX_SKEW`` away from now is refused, so a
captured signature does not work forever; the clients format their local time with a ``Z``, so
both readings of it are accepted.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from halfmq.errors import Unauthenticated

_AUTH = re.compile(r"^MQv2-HMAC-SHA1\s+Credential=([^,\s]*),\s*SignedHeaders=x-mq-date-time,\s*Signature=([0-9a-fA-F]+)\s*$")
MAX_SKEW = timedelta(minutes=15)


def signed_parts(metadata: dict[str, str]) -> tuple[str, str, str]:
    """(access key, signed date-time, signature) from a request's metadata, or ("", "", "") if unsigned."""
    match = _AUTH.match(metadata.get("authorization", ""))
    if match is None:
        return "", "", ""
    return match.group(1), metadata.get("x-mq-date-time", ""), match.group(2)


def fresh(date_time: str, now: datetime | None = None) -> bool:
    try:
        signed = datetime.strptime(date_time, "%Y%m%dT%H%M%SZ")
    except ValueError:
        return False
    now = now or datetime.now(UTC)
    readings = (now.replace(tzinfo=None), now.astimezone().replace(tzinfo=None))  # UTC, and the broker's local time
    return any(abs(signed - reading) <= MAX_SKEW for reading in readings)


def principal(guard: Any, metadata: dict[str, str], path: str) -> Any:
    """The request's principal (ANONYMOUS with auth off); Unauthenticated for an unsigned, stale or bad signature."""
    if not guard.enabled:
        return guard.rocketmq_principal("", "", "", path)
    access_key, date_time, signature = signed_parts(metadata)
    if access_key and not fresh(date_time):
        raise Unauthenticated("the request's x-mq-date-time is missing or more than 15 minutes off")
    return guard.rocketmq_principal(access_key, date_time, signature, path)
