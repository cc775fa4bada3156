"""How plain sends share batch requests: the take policy (``Limits``) and the refusal rule the batching engine runs them with.

Why: one HTTP request per message cost the SDK (aiohttp, JSON, numbering) and the broker
(one request, one write group) far more than the message itself; at 64 in flight the SDK
made 3.0k sends/s while the broker takes 120k msg/s in batches. So sends to a topic that
arrive in one pass, or while its earlier requests are in flight, share the next request
(``batching``, keyed by topic). Each caller keeps exactly the answer it would have got alone:

* A batch is one write group on the broker, all stored or none. A refusal that may concern
  one message (a 4xx other than the topic's, the credentials' or the numbering's) stored
  nothing, so every member is sent again on its own (``concerns_the_request`` decides the split).
* A refusal that concerns the request (unknown topic, access, fencing) or a failure after the
  retries (the broker unreachable) is what each member alone would have got: each its own copy.
* A batch request is numbered like any other (``numbering``): it takes one sequence, its
  retries keep it, so a retry after a lost answer stores nothing twice.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from halfmq.errors import (
    AccessDenied,
    BrokerError,
    DuplicateSequenceNumber,
    InvalidProducerEpoch,
    InvalidTopicName,
    OutOfOrderSequence,
    ProducerFenced,
    SequenceNumberReused,
    SystemTopicForbidden,
    TopicNotFound,
    Unauthenticated,
    UnknownProducerId,
)
from halfmq.wire import MAX_BATCH, OutgoingMessage, SendResult
from halfmq.wire.base import utf8_size

from .batching import PassCoalescer

__all__ = ["BATCH_BYTES", "MAX_REQUESTS_PER_TOPIC", "MIN_SHARE", "Limits", "concerns_the_request", "send_coalescer", "take_count", "wire_size"]

# A request's messages are kept well under the broker's default request limit (32 MiB at least): a few large
# messages gain nothing from sharing a request. A broker set to a smaller limit refuses a batch over it with
# REQUEST_TOO_LARGE, and its members are then sent alone.
BATCH_BYTES = 1024 * 1024
# Batch requests of one topic in flight at once: while they wait for the broker's fsync, the next
# sends gather for the following one.
MAX_REQUESTS_PER_TOPIC = 4
# The fewest sends a request of a burst is cut down to when the burst is shared among several requests.
MIN_SHARE = 32
_OVERHEAD = 64  # JSON field names and quotes per message, for the byte estimate

# Refusals that say the same about every message of the request: a member sent alone would get them too.
_REQUEST_WIDE: tuple[type[BrokerError], ...] = (
    TopicNotFound, InvalidTopicName, SystemTopicForbidden, AccessDenied, Unauthenticated,
    ProducerFenced, InvalidProducerEpoch, OutOfOrderSequence, UnknownProducerId, DuplicateSequenceNumber,
    SequenceNumberReused,  # (PRODUCER_ID_NOT_OWNED is an AccessDenied)
)

SendBatch = Callable[[str, list[OutgoingMessage]], Awaitable[list[SendResult]]]
SendOne = Callable[[str, OutgoingMessage], Awaitable[SendResult]]


def take_count(sizes: Sequence[int], free_requests: int = 1, max_messages: int = MAX_BATCH, max_bytes: int = BATCH_BYTES, min_share: int = MIN_SHARE) -> int:
    """How many pending sends (oldest first, of these byte ``sizes``) the next request carries.

    A burst is shared among the ``free_requests`` that may start now, but no request is cut below
    ``min_share`` sends for it: parallel requests overlap their waits for the broker's fsync, and one
    request's lost answers (each costs a retry) never hold a whole burst. At least one send (a message
    larger than ``max_bytes`` goes alone), then as many as fit both limits.
    """
    share = max(min_share, -(-len(sizes) // max(free_requests, 1)))
    limit = min(share, max_messages)
    taken = total = 0
    for size in sizes:
        if taken and (taken >= limit or total + size > max_bytes):
            break
        taken += 1
        total += size
    return taken


def concerns_the_request(error: BaseException) -> bool:
    """True when a refused batch's error is what each member alone would get; False when members must go alone.

    Only a 4xx that is not retriable may concern one message; 5xx and transport failures concern the request.
    """
    if not isinstance(error, BrokerError):
        return True
    if error.retriable or not 400 <= error.status < 500:
        return True
    return isinstance(error, _REQUEST_WIDE)


def wire_size(message: OutgoingMessage) -> int:
    """A cheap estimate of the message's bytes in the request body: its text in UTF-8 bytes (ASCII text without encoding
    it), JSON's quotes and field names for the rest, so multi-byte text cannot make a request 4 times ``max_bytes``."""
    size = utf8_size(message.body) + _OVERHEAD
    for name, value in message.properties.items():
        size += utf8_size(name) + utf8_size(value) + 6
    keys = message.keys
    if keys:
        size += sum(utf8_size(key) + 3 for key in keys) if isinstance(keys, list) else utf8_size(keys) + 3
    return size + utf8_size(message.tag) if message.tag else size


@dataclass(frozen=True)
class Limits:
    """How one topic's waiting sends are cut into requests: the engine's take policy for plain sends."""

    max_in_flight: int = MAX_REQUESTS_PER_TOPIC  # batch requests of the topic out at once
    max_messages: int = MAX_BATCH
    max_bytes: int = BATCH_BYTES
    min_share: int = MIN_SHARE

    def __post_init__(self) -> None:
        if min(self.max_in_flight, self.max_bytes, self.min_share) < 1 or not 1 <= self.max_messages <= MAX_BATCH:
            raise ValueError(f"max_requests, max_bytes and min_share >= 1 and 1 <= max_messages <= {MAX_BATCH} are needed")

    def take(self, waiting: Sequence[OutgoingMessage], in_flight: int) -> int:
        """How many of the ``waiting`` messages (oldest first) the next request carries, with ``in_flight`` requests out."""
        free = self.max_in_flight - in_flight
        sizes = [wire_size(m) for m in waiting[: self.max_messages * free]]
        return take_count(sizes, free, self.max_messages, self.max_bytes, self.min_share)


def send_coalescer(send_batch: SendBatch, send_one: SendOne, *, max_requests: int = MAX_REQUESTS_PER_TOPIC,
                   max_messages: int = MAX_BATCH, max_bytes: int = BATCH_BYTES,
                   min_share: int = MIN_SHARE) -> PassCoalescer[str, OutgoingMessage, SendResult]:
    """The engine for ``send`` (``AsyncProducer``, and the blocking ``Producer`` through the loop thread): keyed by topic."""
    return PassCoalescer(send_batch, Limits(max_requests, max_messages, max_bytes, min_share), send_one=send_one,
                         split=lambda error: not concerns_the_request(error))  # an error that may concern one message: each alone
