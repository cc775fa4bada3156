"""Handler parameters FastStream fills from its context: ``async def handle(body: dict, message: HalfmqMessage)``."""

from typing import Annotated

from faststream._internal.context import Context
from faststream.annotations import ContextRepo, Logger
from faststream.params import NoCast

from faststream_halfmq.broker import HalfmqBroker as _Broker
from faststream_halfmq.message import HalfmqMessage as _Message

__all__ = ["ContextRepo", "HalfmqBroker", "HalfmqMessage", "Logger", "NoCast"]

HalfmqMessage = Annotated[_Message, Context("message")]
HalfmqBroker = Annotated[_Broker, Context("broker")]
