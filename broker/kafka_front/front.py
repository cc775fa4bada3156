"""Starting and stopping the Kafka front next to the HTTP one (DESIGN section 19), on the runtime of the moment.

Off unless ``HALFMQ_BROKER_KAFKA_PORT`` names a port; with auth on, a connection authenticates with SASL/PLAIN first
(sasl.py). A broker serving HTTPS (``HALFMQ_BROKER_TLS_CERT_FILE``/``_KEY_FILE``) serves Kafka over TLS with the same
certificate (clients use ``security.protocol=SSL``, or ``SASL_SSL`` with auth on): a token never crosses in the clear.
In a broker set only the leader listens (runtime.SetRoles starts it on promotion and stops it on step-down, as the
RocketMQ front): a client given every node's Kafka address reaches whichever leads, and Metadata
names the leader as the one broker. Consumer groups' members are the leader's memory: after a failover they join again.
"""

from __future__ import annotations

import logging
import ssl
import urllib.parse
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)


class KafkaFront:
    def __init__(self) -> None:
        self.listener: Any = None
        self.port: int | None = None

    async def start(self, current: Callable[[], Any]) -> None:
        """Serve on the current runtime's ``kafka_port``: a single broker from its start, a set's node while it leads."""
        runtime = current()
        settings = runtime.settings
        if not settings.kafka_port or self.listener is not None:
            return
        try:
            from halfmq.broker.security.access import ANONYMOUS

            from .admin_handlers import AdminHandlers
            from .dispatch import Dispatcher
            from .group_coordinator import GroupCoordinator
            from .group_handlers import GroupHandlers
            from .handlers import KafkaHandlers, Node
            from .listener import KafkaListener
            from .producer_sequences import ProducerSequences
            from .sasl import SaslHandlers, connection_principal
            from .txn_handlers import TxnHandlers, TxnSteps
        except ImportError as exc:
            log.warning("Kafka front off: %s (pip install 'halfmq[kafka]')", exc)
            return
        host = urllib.parse.urlsplit(settings.advertise_url).hostname or settings.host
        members = sorted(settings.members())
        node_id = members.index(settings.node_id) + 1 if settings.node_id in members else 0
        def principal() -> Any:  # the connection's SASL principal; with auth off, anonymous
            return connection_principal.get() or ANONYMOUS

        txns = TxnHandlers(current, principal, TxnSteps(settings.kafka_max_producers))
        handlers = KafkaHandlers(current, Node(host, settings.kafka_port, node_id), principal, ProducerSequences(settings.kafka_max_producers), txns)
        coordinator = GroupCoordinator(settings.kafka_max_groups, settings.kafka_max_group_members)
        groups = GroupHandlers(current, principal, coordinator)
        table = handlers.table(groups, SaslHandlers(current), AdminHandlers(current, principal, coordinator))
        self.listener = KafkaListener(Dispatcher(handlers=table, auth_on=lambda: bool(current().access.enabled)))
        try:
            self.port = await self.listener.start(settings.host, settings.kafka_port, server_tls(settings))
        except OSError as exc:  # the port is taken: the broker serves its other fronts, as the RocketMQ front does
            log.error("Kafka front off: cannot listen on %s:%d (%s)", settings.host, settings.kafka_port, exc.strerror or exc)
            self.listener = None
            return
        log.info("Kafka front on %s:%d", settings.host, self.port)

    async def stop(self) -> None:
        listener, self.listener = self.listener, None
        if listener is not None:
            await listener.stop()


def server_tls(settings: Any) -> ssl.SSLContext | None:
    """The HTTP front's certificate and key as a server context (TLS 1.2 at least), or None when the broker has none."""
    if settings.tls_cert_file is None:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(settings.tls_cert_file, settings.tls_key_file)
    return context
