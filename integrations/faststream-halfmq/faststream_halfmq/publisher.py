"""``@broker.publisher(topic)``: sends a handler's result (or ``publisher.publish(...)``) to a halfmq topic."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from faststream._internal.configs import PublisherSpecificationConfig, PublisherUsecaseConfig
from faststream._internal.endpoint.publisher import PublisherSpecification, PublisherUsecase
from faststream.response.publish_type import PublishType
from faststream.specification.asyncapi.utils import resolve_payloads
from faststream.specification.schema import Message as SpecMessage
from faststream.specification.schema import Operation, PublisherSpec

from .config import HalfmqBrokerConfig
from .response import Delay, HalfmqPublishCommand

if TYPE_CHECKING:
    from faststream._internal.basic_types import SendableMessage
    from faststream._internal.types import PublisherMiddleware
    from faststream.response.response import PublishCommand

__all__ = ["HalfmqPublisher", "HalfmqPublisherConfig", "HalfmqPublisherSpecification"]


@dataclass(kw_only=True)
class HalfmqPublisherConfig(PublisherUsecaseConfig):
    _outer_config: HalfmqBrokerConfig = field(default_factory=HalfmqBrokerConfig)

    topic: str
    headers: dict[str, str] | None = None
    message_group: str | None = None
    delay: Delay = None


@dataclass(kw_only=True)
class HalfmqPublisherSpecificationConfig(PublisherSpecificationConfig):
    topic: str


class HalfmqPublisherSpecification(PublisherSpecification[HalfmqBrokerConfig, HalfmqPublisherSpecificationConfig]):
    @property
    def topic(self) -> str:
        return f"{self._outer_config.prefix}{self.config.topic}"

    @property
    def name(self) -> str:
        return self.config.title_ or f"{self.topic}:Publisher"

    def get_schema(self) -> dict[str, PublisherSpec]:
        payloads = self.get_payloads()
        return {self.name: PublisherSpec(
            address=self.topic, description=self.config.description_, bindings=None,
            operation=Operation(message=SpecMessage(title=f"{self.name}:Message", payload=resolve_payloads(payloads, "Publisher")),
                                bindings=None))}


class HalfmqPublisher(PublisherUsecase):
    """Publishes to one topic, with the message group, delay and headers it was declared with as defaults."""

    _outer_config: HalfmqBrokerConfig

    def __init__(self, config: HalfmqPublisherConfig, specification: PublisherSpecification[Any, Any]) -> None:
        super().__init__(config, specification)
        self._topic = config.topic
        self.headers = config.headers or {}
        self.message_group, self.delay = config.message_group, config.delay

    @property
    def topic(self) -> str:
        return f"{self._outer_config.prefix}{self._topic}"

    async def publish(self, message: SendableMessage = None, topic: str = "", *, headers: dict[str, str] | None = None,
                      correlation_id: str | None = None, reply_to: str = "", message_group: str | None = None,
                      delay: Delay = None, keys: list[str] | str | None = None, tag: str | None = None) -> Any:
        cmd = HalfmqPublishCommand(message, topic=topic or self.topic, headers=self.headers | (headers or {}),
                                   correlation_id=correlation_id or self._outer_config.id_generator(), reply_to=reply_to,
                                   message_group=message_group or self.message_group,
                                   delay=delay if delay is not None else self.delay, keys=keys, tag=tag,
                                   _publish_type=PublishType.PUBLISH)
        return await self._basic_publish(cmd, producer=self._outer_config.producer, _extra_middlewares=())

    async def _publish(self, cmd: PublishCommand | HalfmqPublishCommand, *, _extra_middlewares: Iterable[PublisherMiddleware]) -> None:
        """A handler's result, sent by FastStream's subscriber flow."""
        real = HalfmqPublishCommand.from_cmd(cmd)
        real.destination = self.topic
        real.add_headers(self.headers, override=False)
        real.message_group = real.message_group or self.message_group
        real.delay = real.delay if real.delay is not None else self.delay
        await self._basic_publish(real, producer=self._outer_config.producer, _extra_middlewares=_extra_middlewares)

    async def request(self, message: SendableMessage = None, topic: str = "", *, correlation_id: str | None = None,
                      headers: dict[str, str] | None = None, timeout: float | None = 30.0) -> Any:  # noqa: ASYNC109
        cmd = HalfmqPublishCommand(message, topic=topic or self.topic, headers=self.headers | (headers or {}),
                                   correlation_id=correlation_id or self._outer_config.id_generator(), timeout=timeout,
                                   _publish_type=PublishType.REQUEST)
        return await self._basic_request(cmd, producer=self._outer_config.producer)
