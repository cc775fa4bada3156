"""Starting and stopping the Kafka front next to the HTTP one (DESIGN section 19), on the runtime of the moment.

Off unless ``HALFMQ_BROKER_KAFKA_PORT`` names a port; with auth on, a connection authenticates with SASL/PLAIN first
(sasl.py). A broker serving HTTPS (``HALFMQ_BROKER_TLS_CERT_FILE``/``_KEY_FILE``) serves Kafka over TLS with the same
certificate (clients use ``security.protocol=SSL``, or ``SASL_SSL`` with auth on): a token never crosses in the clear.
In a broker set every member listens while it runs, leader or follower (issue 47): Metadata names every member as a
broker (a stable node id each, at the Kafka address it advertises: ``HALFMQ_BROKER_KAFKA_ADVERTISE``, else its host
and Kafka port, read from the members' registrations in etcd) and the leader as every partition's; a follower refuses
what only the leader serves with NOT_LEADER_OR_FOLLOWER or NOT_COORDINATOR (set_view.py decides), so a running
kafka-python, aiokafka or librdkafka client moves to a new leader as it does when a Kafka partition's leader moves.
runtime.SetRoles says when this node leads (``lead``) and stops (``step_down``); each change builds the handlers again,
so consumer groups' members, the leader's memory, join again after a failover.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)


class KafkaFront:
    def __init__(self) -> None:
        self.listener: Any = None
        self.port: int | None = None
        self.picture: Any = None  # a set's node's (set_picture.KafkaSetPicture), made at ``start`` when ``in_set`` was called
        self._set_member: tuple[str, Any] | None = None  # (own id, set_picture.SetMember)
        self._current: Callable[[], Any] | None = None

    def in_set(self, own: str, member: Any) -> None:
        """Serve as the member ``own`` of a broker set: ``member`` (set_picture.SetMember) says who leads, who is in
        sync and where the members' Kafka addresses are, and calls the leader's HTTP front as a client (a follower's
        idempotent InitProducerId, leader_producer_ids.py)."""
        self._set_member = (own, member)

    @staticmethod
    def registered_address(settings: Any) -> dict[str, str]:
        """What this node adds to its registration in etcd: its Kafka address (none while the front is off)."""
        from .set_picture import kafka_address

        return {"kafka": kafka_address(*settings.kafka_advertised())} if settings.kafka_port else {}

    async def start(self, current: Callable[[], Any]) -> None:
        """Serve on the current runtime's ``kafka_port``: a single broker, or a set's member, from its start."""
        runtime = current()
        settings = runtime.settings
        if not settings.kafka_port or self.listener is not None:
            return
        made = self._dispatcher(current)
        if made is None:
            return
        self.listener, self._current = made[0], current
        try:
            self.port = await self.listener.start(settings.host, settings.kafka_port, server_tls(settings))
        except OSError as exc:  # the port is taken: the broker serves its other fronts, as the RocketMQ front does
            log.error("Kafka front off: cannot listen on %s:%d (%s)", settings.host, settings.kafka_port, exc.strerror or exc)
            self.listener = None
            return
        if self.picture is not None:
            self.picture.start()
        log.info("Kafka front on %s:%d", settings.host, self.port)

    async def lead(self, current: Callable[[], Any]) -> None:
        """A set's node leads with its services up: fresh handlers over them, then the refusals lifted."""
        if self.listener is not None and self.picture is not None:
            self._renew_handlers(current)
            self.picture.leading = True

    async def step_down(self) -> None:
        """A set's node no longer leads (or stops): the refusals first, then fresh handlers (no group of the old term)."""
        if self.listener is not None and self.picture is not None and self._current is not None:
            self.picture.leading = False
            self._renew_handlers(self._current)

    def _renew_handlers(self, current: Callable[[], Any]) -> None:
        """The listener's dispatcher made again over ``current``'s runtime: no group or transaction of the last role."""
        made = self._dispatcher(current, self.listener)
        if made is not None:
            self.listener.dispatcher = made[1]

    def _dispatcher(self, current: Callable[[], Any], listener: Any = None) -> tuple[Any, Any] | None:
        """(the listener, given or new; a dispatcher over fresh handlers), or None when the front's extra is missing."""
        settings = current().settings
        try:
            from halfmq.broker.security.access import ANONYMOUS

            from .admin_handlers import AdminHandlers
            from .dispatch import Dispatcher
            from .group_coordinator import GroupCoordinator
            from .group_handlers import GroupHandlers
            from .handlers import KafkaHandlers, Node
            from .leader_producer_ids import LeaderProducerIds
            from .leader_topics import LeaderTopics
            from .listener import KafkaListener
            from .producer_sequences import ProducerSequences
            from .sasl import SaslHandlers, connection_principal
            from .txn_handlers import TxnHandlers, TxnSteps
        except ImportError as exc:
            log.warning("Kafka front off: %s (pip install 'halfmq[kafka]')", exc)
            return None
        from .set_picture import KafkaSetPicture, kafka_node_ids

        host, port = settings.kafka_advertised()
        node_id = kafka_node_ids(settings.members()).get(settings.node_id, 0)
        if self.picture is None and self._set_member is not None:
            own, member = self._set_member
            self.picture = KafkaSetPicture(own, settings.members(), (host, port), member)
        view = self.picture.view if self.picture is not None else None

        def principal() -> Any:  # the connection's SASL principal; with auth off, anonymous
            return connection_principal.get() or ANONYMOUS

        coordinator = GroupCoordinator(settings.kafka_max_groups, settings.kafka_max_group_members)
        txns = TxnHandlers(current, principal, TxnSteps(settings.kafka_max_producers), coordinator)
        post_as = self.picture.member.post_to_leader_as if self.picture is not None else None
        handlers = KafkaHandlers(current, Node(host, port, node_id), principal, ProducerSequences(settings.kafka_max_producers), txns,
                                 view=view, leader_ids=LeaderProducerIds(post_as) if post_as else None,
                                 leader_topics=LeaderTopics(post_as) if post_as else None)
        groups = GroupHandlers(current, principal, coordinator)
        table = handlers.table(groups, SaslHandlers(current), AdminHandlers(current, principal, coordinator))
        refusal = refusal_in(self.picture.view) if self.picture is not None else (lambda key, request: None)
        dispatcher = Dispatcher(handlers=table, auth_on=lambda: bool(current().access.enabled), refusal=refusal)
        return (listener or KafkaListener(dispatcher)), dispatcher

    async def stop(self) -> None:
        listener, self.listener = self.listener, None
        if self.picture is not None:
            self.picture.leading = False
            await self.picture.stop()
        if listener is not None:
            await listener.stop()


def refusal_in(view: Callable[[], Any]) -> Callable[[int, Any], int | None]:
    """The dispatcher's refusal of a set's member: its view's (set_view.SetView.refusal), told whether an InitProducerId
    names a transactional id."""
    from kafka.protocol.api_key import ApiKey

    def refusal(key: int, request: Any) -> int | None:
        return view().refusal(key, transactional=key != ApiKey.InitProducerId or bool(getattr(request, "transactional_id", None)))

    return refusal


def server_tls(settings: Any) -> ssl.SSLContext | None:
    """The HTTP front's certificate and key as a server context (TLS 1.2 at least), or None when the broker has none."""
    if settings.tls_cert_file is None:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(settings.tls_cert_file, settings.tls_key_file)
    return context
