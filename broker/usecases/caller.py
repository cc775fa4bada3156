"""Who calls a use case: the principal its front authenticated, and the scope the guard's audit lines name.

A front finds the principal (a bearer token, a RocketMQ signature, the console's
cookie) and hands it in with its ASGI scope (the gRPC front: ``{"path": ...}``);
the use case decides what that principal may do.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from halfmq.broker.security.policy import Principal

Scope = Mapping[str, Any]

__all__ = ["Principal", "Scope"]
