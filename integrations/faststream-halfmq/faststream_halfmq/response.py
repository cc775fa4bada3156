"""What a publish carries to halfmq: FastStream's command with halfmq's send options (message group, delay, keys, tag)."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from faststream.response.publish_type import PublishType
from faststream.response.response import PublishCommand, Response

if TYPE_CHECKING:
    from faststream._internal.basic_types import SendableMessage

__all__ = ["Delay", "HalfmqPublishCommand", "HalfmqResponse"]

Delay = timedelta | float | None


class HalfmqResponse(Response):
    """A handler's answer with halfmq's send options: ``return HalfmqResponse(body, message_group="acct-1")``."""

    def __init__(self, body: SendableMessage, *, headers: dict[str, str] | None = None, correlation_id: str | None = None,
                 message_group: str | None = None, delay: Delay = None, keys: list[str] | str | None = None,
                 tag: str | None = None) -> None:
        super().__init__(body=body, headers=headers, correlation_id=correlation_id)
        self.message_group, self.delay, self.keys, self.tag = message_group, delay, keys, tag

    def as_publish_command(self) -> HalfmqPublishCommand:
        return HalfmqPublishCommand(self.body, headers=self.headers, correlation_id=self.correlation_id,
                                    message_group=self.message_group, delay=self.delay, keys=self.keys, tag=self.tag,
                                    _publish_type=PublishType.PUBLISH)


class HalfmqPublishCommand(PublishCommand):
    """One publish to a halfmq topic (``destination``)."""

    def __init__(self, message: SendableMessage, *, topic: str = "", correlation_id: str | None = None,
                 headers: dict[str, str] | None = None, reply_to: str = "", message_group: str | None = None,
                 delay: Delay = None, keys: list[str] | str | None = None, tag: str | None = None,
                 timeout: float | None = 30.0, _publish_type: PublishType) -> None:
        super().__init__(body=message, destination=topic, correlation_id=correlation_id, headers=headers,
                         reply_to=reply_to, _publish_type=_publish_type)
        self.message_group, self.delay, self.keys, self.tag, self.timeout = message_group, delay, keys, tag, timeout
        self.extra_bodies: tuple[SendableMessage, ...] = ()

    @property
    def batch_bodies(self) -> tuple[SendableMessage, ...]:
        return (*super().batch_bodies, *self.extra_bodies)

    @classmethod
    def from_cmd(cls, cmd: PublishCommand | HalfmqPublishCommand) -> HalfmqPublishCommand:
        if isinstance(cmd, HalfmqPublishCommand):
            return cmd
        return cls(cmd.body, topic=cmd.destination, correlation_id=cmd.correlation_id, headers=cmd.headers,
                   reply_to=cmd.reply_to, timeout=getattr(cmd, "timeout", None), _publish_type=cmd.publish_type)

    def send_options(self) -> dict[str, object]:
        """The SDK's send options this command sets."""
        return {"message_group": self.message_group, "delay": self.delay, "keys": self.keys, "tag": self.tag}
