"""The broker's configuration as FastStream composes it (routers' prefixes, middlewares), with halfmq's connection."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from faststream._internal.configs import BrokerConfig
from faststream.exceptions import IncorrectState

from .producer import HalfmqProducer

if TYPE_CHECKING:
    from .producer import HalfmqConnection

__all__ = ["HalfmqBrokerConfig"]


@dataclass(kw_only=True)
class HalfmqBrokerConfig(BrokerConfig):
    producer: HalfmqProducer = field(default_factory=HalfmqProducer)
    _connection: HalfmqConnection | None = field(default=None, init=False, repr=False)

    @property
    def connection(self) -> HalfmqConnection:
        if self._connection is None:
            raise IncorrectState("HalfmqBroker is not connected: call `await broker.connect()` or start the app first")
        return self._connection

    def connect(self, connection: HalfmqConnection) -> None:
        self._connection = connection
        self.producer.connect(connection, self.fd_config._serializer, self.broker_codec)

    def disconnect(self) -> None:
        self._connection = None
        self.producer.disconnect()
