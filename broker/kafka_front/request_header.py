"""A request frame's header: which API, which version, the correlation id the answer must carry, the client's id.

Kafka has two request headers: v1 (api key, api version, correlation id, nullable client id) and v2, which adds
tagged fields after them for an API version its schema marks flexible. Which one a frame carries depends on its key
and version, so those two int16s are read first; the rest is kafka-python's ``RequestHeader`` (Kafka's
RequestHeader.json). The client id is a plain nullable string in both (never compact), so a header of a version no
schema describes still yields the correlation id that an UNSUPPORTED_VERSION answer needs.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafka.protocol.api_header import RequestHeader as KafkaRequestHeader

KEY_AND_VERSION = struct.Struct(">hh")


class HeaderUnreadable(Exception):
    """A frame too short or too damaged to name its API and correlation id: nothing can be answered to it."""


@dataclass(frozen=True, slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    flexible: bool
    """Header v2 (tagged fields), as the request's schema says for this version."""
    body_offset: int
    """Where the request body starts in the frame."""


def parse_request_header(payload: bytes, is_flexible: Callable[[int, int], bool]) -> RequestHeader:
    """The header at the start of ``payload``; ``is_flexible(api_key, api_version)`` picks header v1 or v2."""
    if len(payload) < KEY_AND_VERSION.size + 4:
        raise HeaderUnreadable(f"a request frame of {len(payload)} bytes holds no header")
    api_key, api_version = KEY_AND_VERSION.unpack_from(payload)
    flexible = is_flexible(api_key, api_version)
    buffer = io.BytesIO(payload)
    try:
        header = KafkaRequestHeader.decode(buffer, flexible=flexible)
    except (ValueError, struct.error, UnicodeDecodeError, EOFError) as exc:
        raise HeaderUnreadable(f"request header of API {api_key} v{api_version}: {exc}") from exc
    return RequestHeader(api_key, api_version, header.correlation_id, header.client_id, flexible, buffer.tell())


def audit_scope(header: RequestHeader, api: str) -> dict[str, Any]:
    """What the guard's audit lines name for a Kafka request (the HTTP front's ASGI scope, the gRPC front's path)."""
    return {"path": f"kafka:{api}", "client": header.client_id}
