"""``HalfmqBroker``, ``HalfmqRouter`` and their decorators: FastStream's broker API on the halfmq SDK's async clients."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast

from fast_depends import dependency_provider
from faststream._internal.broker import BrokerUsecase
from faststream._internal.broker.registrator import Registrator
from faststream._internal.broker.router import ArgsContainer, BrokerRouter, SubscriberRoute
from faststream._internal.constants import EMPTY
from faststream._internal.context.repository import ContextRepo
from faststream._internal.di import FastDependsConfig
from faststream._internal.endpoint.subscriber.call_item import CallsCollection
from faststream._internal.logger import DefaultLoggerStorage, make_logger_state
from faststream._internal.logger.logging import get_broker_logger
from faststream.middlewares import AckPolicy
from faststream.response.publish_type import PublishType
from faststream.specification.schema import BrokerSpec

from halfmq import BrokerError, Message, SendResult

from .config import HalfmqBrokerConfig
from .half_messages import HalfMessagePublisher
from .producer import HalfmqConnection, HalfmqProducer
from .publisher import HalfmqPublisher, HalfmqPublisherConfig, HalfmqPublisherSpecification, HalfmqPublisherSpecificationConfig
from .response import Delay, HalfmqPublishCommand
from .subscriber import HalfmqSubscriber, HalfmqSubscriberConfig, HalfmqSubscriberSpecification, HalfmqSubscriberSpecificationConfig

if TYPE_CHECKING:
    from fast_depends.dependencies import Dependant
    from faststream._internal.basic_types import LoggerProto, SendableMessage
    from faststream._internal.context import ContextRepo as ContextRepoType
    from faststream._internal.types import BrokerMiddleware, CustomCallable

    from halfmq.client.sqlalchemy.async_barrier import AsyncTransactionBarrier
    from halfmq.client.sqlalchemy.barrier import TransactionBarrier

__all__ = ["HalfmqBroker", "HalfmqPublisherArgs", "HalfmqRegistrator", "HalfmqRoute", "HalfmqRouter"]


class _LogStorage(DefaultLoggerStorage):
    def __init__(self) -> None:
        super().__init__()
        self._width = 4
        self.logger_log_level = logging.INFO

    def set_level(self, level: int) -> None:
        self.logger_log_level = level

    def register_subscriber(self, params: dict[str, Any]) -> None:
        self._width = max(self._width, len(f"{params.get('group', '')} | {params.get('topic', '')}"))

    def get_logger(self, *, context: ContextRepoType) -> LoggerProto:
        if not (lg := self._get_logger_ref()):
            lg = get_broker_logger(name="halfmq", default_context={"topic": "", "group": ""}, message_id_ln=10,
                                   fmt="%(asctime)s %(levelname)-8s - %(group)s | %(topic)s | %(message_id)-10s - %(message)s",
                                   context=context, log_level=self.logger_log_level)
            self._logger_ref.add(lg)
        return lg


class HalfmqRegistrator(Registrator[Message, HalfmqBrokerConfig]):
    """The decorators a broker and its routers share."""

    def subscriber(self, topic: str, *, group: str, max_messages: int = 16, invisible_seconds: float = 30.0,  # type: ignore[override]
                   wait_seconds: float = 5.0, max_workers: int = 1, transactional_id: str | None = None,
                   ack_policy: AckPolicy = EMPTY, no_reply: bool = False, dependencies: Sequence[Dependant] = (),
                   parser: CustomCallable | None = None, decoder: CustomCallable | None = None, persistent: bool = True,
                   title: str | None = None, description: str | None = None, include_in_schema: bool = True) -> HalfmqSubscriber:
        """Handle ``topic``'s messages as consumer ``group`` (each group gets every message; the group's subscribers
        share them).

        ``max_messages`` per receive, each hidden from the group for ``invisible_seconds`` until settled (a handler
        must finish within it), long-polled for ``wait_seconds``; ``max_workers`` handled at once.
        ``transactional_id``: run consume-transform-produce in one transaction per message (the handler's publishes
        and the message's ack commit together); a stable name per instance, such as ``"credit-1"``.
        The default ack policy is ``NACK_ON_ERROR``: a failed handler's message is delivered again after the
        broker's backoff, then dead-lettered past the group's retry limit.
        """
        config = cast(HalfmqBrokerConfig, self.config)
        calls = CallsCollection[Any]()
        subscriber = HalfmqSubscriber(
            HalfmqSubscriberConfig(topic=topic, group=group, max_messages=max_messages, invisible_seconds=invisible_seconds,
                                   wait_seconds=wait_seconds, max_workers=max_workers, transactional_id=transactional_id,
                                   no_reply=no_reply, _outer_config=config, _ack_policy=ack_policy),
            HalfmqSubscriberSpecification(config, HalfmqSubscriberSpecificationConfig(
                topic=topic, group=group, title_=title, description_=description, include_in_schema=include_in_schema), calls),
            calls)
        super().subscriber(subscriber, persistent=persistent)
        return subscriber.add_call(parser_=parser or self._parser, decoder_=decoder or self._decoder, dependencies_=dependencies)

    def publisher(self, topic: str, *, headers: dict[str, str] | None = None, message_group: str | None = None,  # type: ignore[override]
                  delay: Delay = None, persistent: bool = True, title: str | None = None, description: str | None = None,
                  schema: Any | None = None, include_in_schema: bool = True) -> HalfmqPublisher:
        """Send to ``topic``: as a decorator, the handler's return value; or call ``.publish(...)``.
        ``message_group`` and ``delay`` are defaults each publish may override."""
        config = cast(HalfmqBrokerConfig, self.config)
        publisher = HalfmqPublisher(
            HalfmqPublisherConfig(topic=topic, headers=headers, message_group=message_group, delay=delay, _outer_config=config),
            HalfmqPublisherSpecification(_outer_config=config, specification_config=HalfmqPublisherSpecificationConfig(
                topic=topic, schema_=schema, title_=title, description_=description, include_in_schema=include_in_schema)))
        super().publisher(publisher, persistent=persistent)
        return publisher

    def include_router(self, router: HalfmqRegistrator, *, prefix: str = "", dependencies: Sequence[Dependant] = (),  # type: ignore[override]
                       middlewares: Sequence[BrokerMiddleware[Any, Any]] = (), include_in_schema: bool | None = None) -> None:
        if not isinstance(router, HalfmqRegistrator):
            raise TypeError(f"Router must be a HalfmqRouter, not {type(router).__name__}")
        super().include_router(router, prefix=prefix, dependencies=dependencies, middlewares=middlewares,
                               include_in_schema=include_in_schema)


class HalfmqPublisherArgs(ArgsContainer):
    """A publisher for a ``HalfmqRoute`` (registered when its router is)."""

    def __init__(self, topic: str, *, headers: dict[str, str] | None = None, message_group: str | None = None,
                 delay: Delay = None, persistent: bool = True, title: str | None = None, description: str | None = None,
                 schema: Any | None = None, include_in_schema: bool = True) -> None:
        super().__init__(topic, headers=headers, message_group=message_group, delay=delay, persistent=persistent,
                         title=title, description=description, schema=schema, include_in_schema=include_in_schema)


class HalfmqRoute(SubscriberRoute):
    """A subscriber declared apart from its router: ``HalfmqRouter(handlers=[HalfmqRoute(handle, "ORDERS", group="g")])``."""

    def __init__(self, call: Callable[..., Any] | Callable[..., Awaitable[Any]], topic: str, *, group: str,
                 publishers: Iterable[HalfmqPublisherArgs] = (), **options: Any) -> None:
        super().__init__(call, topic, group=group, publishers=publishers, **options)


class HalfmqRouter(HalfmqRegistrator, BrokerRouter[Message, HalfmqBrokerConfig]):
    """Subscribers and publishers to include in a ``HalfmqBroker`` (``prefix`` goes before their topics)."""

    def __init__(self, prefix: str = "", handlers: Iterable[HalfmqRoute] = (), *, dependencies: Sequence[Dependant] = (),
                 middlewares: Sequence[BrokerMiddleware[Any, Any]] = (), routers: Iterable[HalfmqRegistrator] = (),
                 parser: CustomCallable | None = None, decoder: CustomCallable | None = None,
                 include_in_schema: bool | None = None, ack_policy: AckPolicy = EMPTY) -> None:
        super().__init__(handlers=handlers, routers=routers, config=HalfmqBrokerConfig(
            prefix=prefix, ack_policy=ack_policy, broker_dependencies=dependencies, broker_middlewares=middlewares,
            broker_parser=parser, broker_decoder=decoder, include_in_schema=include_in_schema))


class HalfmqBroker(HalfmqRegistrator, BrokerUsecase[Message, HalfmqConnection, HalfmqBrokerConfig]):
    """A FastStream broker for halfmq: ``HalfmqBroker("http://127.0.0.1:10911", token=...)``.

    ``url`` is the broker's (or a replicated set's comma-separated URLs); ``token`` and the other ``client_options``
    (``timeout``, ``retries``, ``pool_size`` …) go to every SDK client the broker makes.
    """

    def __init__(self, url: str = "http://127.0.0.1:10911", *, token: str | None = None, client_options: dict[str, Any] | None = None,
                 graceful_timeout: float | None = 15.0, decoder: CustomCallable | None = None, parser: CustomCallable | None = None,
                 dependencies: Sequence[Dependant] = (), middlewares: Sequence[BrokerMiddleware[Any, Any]] = (),
                 routers: Iterable[HalfmqRegistrator] = (), ack_policy: AckPolicy = EMPTY,
                 specification_url: str | None = None, description: str | None = None,
                 logger: LoggerProto | None = EMPTY, log_level: int = logging.INFO, apply_types: bool = True,
                 context: ContextRepo | None = None) -> None:
        options = dict(client_options or {})
        if token is not None:
            options["token"] = token
        super().__init__(
            url=url, options=options, routers=routers,
            config=HalfmqBrokerConfig(
                producer=HalfmqProducer(parser=parser, decoder=decoder), broker_middlewares=middlewares,
                broker_parser=parser, broker_decoder=decoder,
                logger=make_logger_state(logger=logger, log_level=log_level, default_storage_cls=_LogStorage),
                fd_config=FastDependsConfig(use_fastdepends=apply_types, provider=dependency_provider,
                                            context=context or ContextRepo()),
                broker_dependencies=dependencies, graceful_timeout=graceful_timeout, ack_policy=ack_policy,
                extra_context={"broker": self}),
            specification=BrokerSpec(description=description, url=[specification_url or url], protocol="http",
                                     protocol_version="halfmq-v1", tags=(), security=None))
        self._half_message_publishers: list[HalfMessagePublisher] = []

    def half_message_publisher(self, topic: str, *, producer_group: str, barrier: AsyncTransactionBarrier | TransactionBarrier,
                               check_url: str | None, producer_options: dict[str, Any] | None = None) -> HalfMessagePublisher:
        """A transactional publisher to ``topic``: RocketMQ's half message around your database work, the check-back
        answered by ``barrier``'s records (serve ``publisher.check_app()`` at ``check_url``); started with the broker.
        ``producer_options``: more of ``AsyncTransactionProducer``'s (``heartbeat_interval`` …)."""
        publisher = HalfMessagePublisher(self.config, topic, producer_group=producer_group, barrier=barrier,
                                         check_url=check_url, producer_options=producer_options)
        self._half_message_publishers.append(publisher)
        return publisher

    async def _connect(self) -> HalfmqConnection:
        connection = await HalfmqConnection(self._connection_kwargs["url"], self._connection_kwargs["options"]).open()
        self.config.connect(connection)
        return connection

    async def start(self) -> None:
        connection = await self.connect()
        for publisher in self._half_message_publishers:
            await publisher.start(connection)
        await super().start()

    async def stop(self, exc_type: type[BaseException] | None = None, exc_val: BaseException | None = None,
                   exc_tb: TracebackType | None = None) -> None:
        await super().stop(exc_type, exc_val, exc_tb)
        for publisher in self._half_message_publishers:
            await publisher.close()
        if self._connection is not None:
            await self._connection.close()
            self._connection = None
        self.config.disconnect()

    async def ping(self, timeout: float | None = None) -> bool:  # noqa: ASYNC109  (FastStream's signature)
        if self._connection is None or self._connection.producer is None:
            return False
        try:
            await self._connection.producer.health()
        except (BrokerError, OSError):
            return False
        return True

    async def publish(self, message: SendableMessage = None, topic: str = "", *, headers: dict[str, str] | None = None,
                      correlation_id: str | None = None, reply_to: str = "", message_group: str | None = None,
                      delay: Delay = None, keys: list[str] | str | None = None, tag: str | None = None) -> SendResult | None:
        """Send ``message`` to ``topic``: its ``SendResult``, or None inside a transactional handler (the message
        joined the transaction). ``message_group``: FIFO within the group; ``delay``: seconds or a timedelta."""
        cmd = HalfmqPublishCommand(message, topic=topic, headers=headers, correlation_id=correlation_id or self.config.id_generator(),
                                   reply_to=reply_to, message_group=message_group, delay=delay, keys=keys, tag=tag,
                                   _publish_type=PublishType.PUBLISH)
        result: SendResult | None = await self._basic_publish(cmd, producer=self.config.producer)
        return result

    async def publish_batch(self, *messages: SendableMessage, topic: str = "", headers: dict[str, str] | None = None,  # type: ignore[override]
                            correlation_id: str | None = None) -> list[SendResult]:
        """One request for many messages, stored all or none."""
        if not messages:
            return []
        cmd = HalfmqPublishCommand(messages[0], topic=topic, headers=headers, correlation_id=correlation_id or self.config.id_generator(),
                                   _publish_type=PublishType.PUBLISH)
        cmd.extra_bodies = messages[1:]
        results: list[SendResult] = await self._basic_publish_batch(cmd, producer=self.config.producer)
        return results

    async def request(self, message: SendableMessage = None, topic: str = "", *, timeout: float = 0.5,  # type: ignore[override]  # noqa: ASYNC109
                      correlation_id: str | None = None, headers: dict[str, str] | None = None) -> Any:
        cmd = HalfmqPublishCommand(message, topic=topic, headers=headers, correlation_id=correlation_id or self.config.id_generator(),
                                   timeout=timeout, _publish_type=PublishType.REQUEST)
        return await self._basic_request(cmd, producer=self.config.producer)
