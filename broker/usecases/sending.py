"""Send messages to a topic: plain, or numbered by an idempotent producer (a repeat in its window is answered, not stored).

A front first asks ``Access.publisher`` (before the request's body is read: a caller without the right learns nothing
about its body's shape); ``send`` takes that grant, writes and waits for the fsync. The gRPC front sends one message at
a time (``target``, then ``send_one``), as RocketMQ 5's SendMessage does.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from halfmq.broker.idempotence.producer_ids import sent_messages
from halfmq.broker.idempotence.producer_records import SendKind
from halfmq.broker.idempotence.send_window import Verdict
from halfmq.broker.observability.metrics import BrokerMetrics
from halfmq.broker.observability.tracing import traced_send
from halfmq.broker.security.access import Access, ClusterAdmin, Publisher
from halfmq.broker.security.policy import Action, Principal, Resource
from halfmq.broker.store.store_types import PutResult
from halfmq.broker.store.topics import TopicConfig
from halfmq.broker.timers.routing import visible_place
from halfmq.broker.usecases.answers import sent_answer
from halfmq.wire import OutgoingMessage, RecallResult, SendRequest, SendResponse, SendResult, SendStatus

from .caller import Scope
from .durability import durable_status
from .numbered_send import NumberedSend
from .ports import Durable, LogEnd, Recaller, Sender, SendWindows, WritableTopics


@dataclass(eq=False)  # a use case, compared by identity
class Sending:
    access: Access
    topics: WritableTopics
    sender: Sender
    windows: SendWindows
    durable: Durable
    log_end: LogEnd
    metrics: BrokerMetrics
    recalls: Recaller

    def rocketmq_publisher(self, who: Principal, scope: Scope, topic: str, transactional: bool) -> Publisher:
        """A RocketMQ 5 send's check per topic: publish to it, and for transactional messages to its producer group,
        which for a gRPC producer is the topic itself (docs/decisions/029-rocketmq-5-front.md)."""
        publisher = self.access.publisher(who, scope, topic)
        if transactional:
            self.access.authorize(who, Action.PUBLISH, Resource.group(topic), scope)
        return publisher

    @traced_send
    async def send(self, publisher: Publisher, body: SendRequest) -> SendResponse:
        """Write ``body``'s messages as one group and wait for the fsync: the answer with one result per message.

        A numbered send (an idempotent producer's) repeated inside its producer's window gets its first answer and
        stores nothing; the window keeps where the messages are, not the answer: a repeat's is read back from them."""
        started = time.perf_counter()
        topic = publisher.topic
        numbered = NumberedSend.of(self.windows, body, publisher.principal.name, SendKind.MESSAGES, "", topic)
        if numbered is not None and numbered.earlier is not None:
            if numbered.earlier is Verdict.OLD_REPEAT:  # stored long ago, answer forgotten: success without offsets, as Kafka answers
                repeat = [SendResult(status=SendStatus.SEND_OK, msg_id=m.properties.get("UNIQ_KEY", ""), topic=topic,
                                     queue_id=-1, queue_offset=-1, commit_log_offset=-1) for m in body.messages]
            else:
                repeat = sent_answer(numbered.earlier, SendStatus.SEND_OK)  # type: ignore[arg-type]  # a plain send's key: a list
            await self.durable(self.log_end())  # the first attempt may still be waiting for its fsync
            return SendResponse(results=repeat, duplicate=True)
        results, end = self.sender.send(topic, body.messages, then=numbered.record if numbered else None)
        if numbered is not None:
            numbered.sent(results[0].commit_log_offset, len(results))
        status = await durable_status(self.durable, end)
        self._observe(status, started)
        return SendResponse(results=sent_answer(sent_messages(results), status))

    def _observe(self, status: SendStatus, started: float) -> None:
        self.metrics.send_requests.labels(status.value).inc()
        self.metrics.send_latency.observe(time.perf_counter() - started)

    def target(self, publisher: Publisher) -> tuple[TopicConfig, bool]:
        """The topic a producer may send to and whether it exists yet (InvalidTopicName / TopicNotFound first)."""
        return self.topics.writable(publisher.topic)

    async def send_one(self, publisher: Publisher, message: OutgoingMessage) -> PutResult:
        """One plain message, durable when this returns (FlushTimedOut otherwise)."""
        results, end = self.sender.send(publisher.topic, [message])
        await self.durable(end)
        return results[0]

    async def recall(self, publisher: Publisher, recall_handle: str) -> RecallResult:
        """Recall the timed message ``recall_handle`` names on the publisher's topic, durable when this returns: it is
        never delivered. The right to recall is the right to send to the topic (``Access.publisher``, audited).
        INVALID_RECALL_HANDLE for a handle the log does not back, RECALL_TOO_LATE once it is due; a second recall
        answers ``duplicate`` and writes nothing."""
        return await self._recall(publisher.topic, recall_handle)

    async def recall_now(self, admin: ClusterAdmin, topic: str, recall_handle: str) -> RecallResult:
        """An operator's recall (the console): a cluster admin may recall on any topic; otherwise as ``recall``."""
        return await self._recall(topic, recall_handle)

    async def _recall(self, topic: str, recall_handle: str) -> RecallResult:
        outcome = self.recalls.recall(topic, recall_handle)
        await self.durable(outcome.end)
        return RecallResult(msg_id=outcome.msg_id, topic=outcome.topic, deliver_at_ms=outcome.deliver_at_ms,
                            duplicate=outcome.duplicate)


def _send_results(results: list[Any], status: SendStatus) -> list[SendResult]:
    """One answer per message; a timed one names its real topic and queue, queue offset -1 and its due time."""
    answers = []
    for r in results:
        topic, queue_id, queue_offset, due = visible_place(r.topic, r.queue_id, r.queue_offset, r.properties)
        answers.append(SendResult(status=status, msg_id=r.properties["UNIQ_KEY"], topic=topic, queue_id=queue_id,
                                  queue_offset=queue_offset, commit_log_offset=r.commit_log_offset, deliver_at_ms=due))
    return answers
