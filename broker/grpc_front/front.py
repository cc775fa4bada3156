"""Starting and stopping the RocketMQ 5 front next to the HTTP one, and its check-back transport.

Called from the HTTP app's lifespan, so both fronts share one runtime and one
event loop. The front stays off when the port is 0 or the ``rocketmq`` extra
is not installed. With auth on, every call is signed (``request_auth``).
"""

from __future__ import annotations

import logging
from typing import Any

from halfmq.broker.usecases.records import StoredMessage, as_sent

log = logging.getLogger(__name__)


class TelemetryCheckTransport:
    """CheckService's second transport: push the check on a connected producer's telemetry stream."""

    def __init__(self, sessions: Any) -> None:
        self._sessions = sessions

    def connected(self, group: str) -> bool:
        return bool(self._sessions.connected(group))

    def push(self, transaction_id: str, group: str, half: StoredMessage) -> bool:
        from .message_mapping import to_protobuf

        return bool(self._sessions.push_check(group, transaction_id, to_protobuf(as_sent(half))))


class GrpcFront:
    def __init__(self) -> None:
        self.server: Any = None

    async def start(self, runtime: Any) -> None:
        settings = runtime.settings
        if not settings.grpc_port:
            return
        try:
            from .messaging_service import start_server
            from .telemetry_sessions import TelemetrySessions
        except ImportError as exc:
            log.warning("RocketMQ gRPC front off: %s (pip install 'halfmq[rocketmq]')", exc)
            return
        sessions = TelemetrySessions(settings.grpc_telemetry_outbox_commands, settings.grpc_telemetry_outbox_bytes)
        try:
            self.server = await start_server(runtime, sessions, settings.host, settings.grpc_port)
        except RuntimeError as exc:
            log.error("RocketMQ gRPC front off: %s", exc)
            return
        if runtime.checks is not None:
            runtime.checks.push_transport = TelemetryCheckTransport(sessions)
        log.info("RocketMQ gRPC front on %s:%d", settings.host, settings.grpc_port)

    async def stop(self) -> None:
        if self.server is not None:
            await self.server.stop(grace=1.0)
