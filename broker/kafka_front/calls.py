"""What every handler class of the Kafka front starts from: the runtime of the moment and who calls on the connection.

A handler opens each request the same way (the runtime or its use cases, the principal, the audit scope naming the
Kafka API), so the classes share that opening here instead of each holding its own copy of the constructor.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from halfmq.broker.usecases.caller import Principal

from .group_coordinator import GroupCoordinator
from .request_header import RequestHeader, audit_scope


class FrontHandlers:
    """``current``: the runtime of the moment (its ``usecases``, ``access`` and ``settings``); ``principal``: who calls
    (anonymous until SASL maps Kafka's users to halfmq's principals)."""

    def __init__(self, current: Callable[[], Any], principal: Callable[[], Principal]) -> None:
        self.current = current
        self.principal = principal

    def calling(self, header: RequestHeader, api: str) -> tuple[Any, Principal, dict[str, Any]]:
        """The runtime of the moment, who calls, and the audit scope of ``api``: read once, at the request's start."""
        return self.current(), self.principal(), audit_scope(header, api)

    def using(self, header: RequestHeader, api: str) -> tuple[Any, Principal, dict[str, Any]]:
        """``calling`` with the runtime's use cases in its place (what most handlers call)."""
        runtime, who, scope = self.calling(header, api)
        return runtime.usecases, who, scope


class CoordinatedHandlers(FrontHandlers):
    """Handlers that also read the Kafka front's own consumer groups (``coordinator``: their members and state)."""

    def __init__(self, current: Callable[[], Any], principal: Callable[[], Principal], coordinator: GroupCoordinator) -> None:
        super().__init__(current, principal)
        self.coordinator = coordinator
