"""``apache.rocketmq.v2.MessagingService`` on the broker's runtime: the RocketMQ 5 front.

Thin like the HTTP routes: each call authenticates its signer, turns the protobuf
into the same use cases the HTTP front calls (halfmq.broker.usecases), and a typed halfmq error into a RocketMQ status
(``status_codes``). A gRPC producer's group is its topic (docs/decisions/029-rocketmq-5-front.md).
Calls halfmq does not serve answer NOT_IMPLEMENTED.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import grpc
from google.protobuf.timestamp_pb2 import Timestamp
from rocketmq.grpc_protocol import definition_pb2 as pb
from rocketmq.grpc_protocol import service_pb2 as spb
from rocketmq.grpc_protocol import service_pb2_grpc as rpc

from halfmq.broker.security.access import Publisher
from halfmq.broker.usecases import UseCases
from halfmq.broker.usecases.durability import FlushTimedOut
from halfmq.broker.usecases.receiving import tag_filter
from halfmq.broker.usecases.records import recall_handle_of
from halfmq.errors import BrokerError, InvalidRequest, TooManyTelemetryStreams

from . import message_mapping as mm
from . import request_auth
from .status_codes import OK, RocketMQRefusal, broker_error_of, status_of
from .telemetry_sessions import TelemetrySessions

log = logging.getLogger(__name__)

DEFAULT_INVISIBLE = 30.0
MAX_LONG_POLL = 30.0


def _refusal(response: Callable[..., Any], exc: BrokerError) -> Any:
    return response(status=status_of(exc))


def answers(response: Callable[..., Any]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Any exception a unary call lets out still answers with a RocketMQ status: a refusal (a ``BrokerError``, a refusing
    store) its own, so a method raises it rather than catching it; a bug INTERNAL_ERROR, logged."""
    def wrap(method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        async def call(self: Any, request: Any, context: Any) -> Any:
            try:
                return await method(self, request, context)
            except Exception as exc:
                error = broker_error_of(exc)
                if error is None:
                    log.exception("gRPC %s failed", method.__name__)
                    return response(status=pb.Status(code=pb.Code.INTERNAL_ERROR, message=f"{type(exc).__name__}: {exc}"))
                return response(status=status_of(error))
        return call
    return wrap


class MessagingService(rpc.MessagingServiceServicer):
    def __init__(self, current: Callable[[], Any], sessions: TelemetrySessions, host: str, port: int,
                 addresses: Sequence[tuple[str, int]] = ()) -> None:
        self._current = current
        self.sessions = sessions
        self.name(addresses or [(host, port)])

    def name(self, addresses: Sequence[tuple[str, int]]) -> None:
        """The addresses QueryRoute and the settings answer from now on."""
        self.endpoints = endpoints_of(addresses)
        self.broker = pb.Broker(name="halfmq", id=0, endpoints=self.endpoints)

    @property
    def uc(self) -> UseCases:
        """The use cases of the moment."""
        return self.rt.usecases  # type: ignore[no-any-return]

    @property
    def rt(self) -> Any:
        """The runtime of the moment: a broker set's node swaps it when its role changes."""
        return self._current()

    # --- who asks (what they may: the use cases) ---------------------------------------
    def _who(self, context: Any, method: str) -> tuple[Any, dict[str, Any]]:
        """The signer of this call (Unauthenticated otherwise) and the scope the guard's audit lines name."""
        path = f"/apache.rocketmq.v2.MessagingService/{method}"
        return request_auth.principal(self.rt.access, dict(context.invocation_metadata() or ()), path), {"path": path}

    # --- routes ----------------------------------------------------------------
    def _queues(self, topic: str, queues: int) -> list[pb.MessageQueue]:
        return [pb.MessageQueue(topic=pb.Resource(name=topic), id=q, permission=pb.Permission.READ_WRITE, broker=self.broker,
                                accept_message_types=mm.ACCEPTED_TYPES) for q in range(queues)]

    @answers(spb.QueryRouteResponse)
    async def QueryRoute(self, request: spb.QueryRouteRequest, context: Any) -> spb.QueryRouteResponse:  # noqa: N802
        cfg = self.uc.topics.route(*self._who(context, "QueryRoute"), request.topic.name)
        return spb.QueryRouteResponse(status=OK, message_queues=self._queues(cfg.name, cfg.queues))

    @answers(spb.QueryAssignmentResponse)
    async def QueryAssignment(self, request: spb.QueryAssignmentRequest, context: Any) -> spb.QueryAssignmentResponse:  # noqa: N802
        cfg = self.uc.topics.assignment(*self._who(context, "QueryAssignment"), request.group.name, request.topic.name)
        queue = self._queues(cfg.name, 1)[0]
        queue.id = -1  # pop consumption: the broker picks among the topic's queues
        return spb.QueryAssignmentResponse(status=OK, assignments=[pb.Assignment(message_queue=queue)])

    @answers(spb.HeartbeatResponse)
    async def Heartbeat(self, request: spb.HeartbeatRequest, context: Any) -> spb.HeartbeatResponse:  # noqa: N802
        self._who(context, "Heartbeat")
        return spb.HeartbeatResponse(status=OK)

    @answers(spb.NotifyClientTerminationResponse)
    async def NotifyClientTermination(self, request: spb.NotifyClientTerminationRequest, context: Any) -> spb.NotifyClientTerminationResponse:  # noqa: N802
        return spb.NotifyClientTerminationResponse(status=OK)

    # --- settings and check-backs ------------------------------------------------
    def _settings_reply(self, settings: pb.Settings) -> pb.Settings:
        reply = pb.Settings()
        reply.CopyFrom(settings)
        if not reply.HasField("backoff_policy"):
            reply.backoff_policy.CopyFrom(pb.RetryPolicy(
                max_attempts=self.rt.settings.max_reconsume_times + 1,
                exponential_backoff=pb.ExponentialBackoff(initial=mm.duration(1), max=mm.duration(60), multiplier=2)))
        if reply.HasField("access_point"):  # every node of a set, as QueryRoute names them
            reply.access_point.CopyFrom(self.endpoints)
        if reply.HasField("publishing"):
            reply.publishing.max_body_size = self.rt.settings.max_message_size
            reply.publishing.validate_message_type = True
        if reply.HasField("subscription") and not reply.subscription.HasField("long_polling_timeout"):
            reply.subscription.long_polling_timeout.CopyFrom(mm.duration(MAX_LONG_POLL))
        return reply

    async def Telemetry(self, request_iterator: AsyncIterator[spb.TelemetryCommand], context: Any) -> AsyncIterator[spb.TelemetryCommand]:  # noqa: N802
        client_id = dict(context.invocation_metadata() or ()).get("x-mq-client-id", "")
        try:
            who, _ = self._who(context, "Telemetry")
            session = self.sessions.open(client_id, who.name)
        except TooManyTelemetryStreams as exc:  # refused before it holds anything
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, f"{exc.code}: {exc.detail}")
        except BrokerError as exc:
            yield spb.TelemetryCommand(status=status_of(exc))
            return

        async def read() -> None:
            try:
                async for command in request_iterator:
                    if command.HasField("settings"):
                        settings = command.settings
                        if settings.client_type == pb.ClientType.PRODUCER:  # check-backs go only to who may publish for the group
                            self.sessions.publishes(session, self.uc.heartbeats.check_back_groups(
                                who, [t.name for t in settings.publishing.topics]))
                        if not self.sessions.send(session, spb.TelemetryCommand(status=OK, settings=self._settings_reply(settings))):
                            return  # its client does not read: stop reading too (gRPC's flow control then holds it back)
            finally:
                session.outbox.finish()

        reader = asyncio.get_running_loop().create_task(read())
        try:
            while (command := await session.outbox.get()) is not None:
                yield command
            if session.outbox.overflowed:
                await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, f"{session.outbox.why}: read the broker's replies")
        finally:
            self.sessions.close(session)
            reader.cancel()

    # --- producing -----------------------------------------------------------------
    @answers(spb.SendMessageResponse)
    async def SendMessage(self, request: spb.SendMessageRequest, context: Any) -> spb.SendMessageResponse:  # noqa: N802
        try:
            who = self._who(context, "SendMessage")
            publishers: dict[str, Publisher] = {}
            for topic in {m.topic.name for m in request.messages}:
                transactional = any(m.system_properties.message_type == pb.MessageType.TRANSACTION
                                    for m in request.messages if m.topic.name == topic)
                publishers[topic] = self.uc.sending.rocketmq_publisher(*who, topic, transactional)
            entries = [await self._send_one(message, publishers[message.topic.name]) for message in request.messages]
        except FlushTimedOut:
            return spb.SendMessageResponse(status=pb.Status(code=pb.Code.MASTER_PERSISTENCE_TIMEOUT, message="flush timed out"))
        return spb.SendMessageResponse(status=OK, entries=entries)

    async def _send_one(self, message: pb.Message, publisher: Publisher) -> spb.SendResultEntry:
        kind = message.system_properties.message_type
        conflict = mm.type_conflict(message.system_properties)
        if conflict:
            raise RocketMQRefusal(pb.Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, conflict)
        target = self.uc.sending.target(publisher)  # an unknown or invalid topic is told before a bad message
        try:
            outgoing = mm.outgoing(message)
        except BrokerError:
            raise  # the broker's own typed refusal when the message is built (a message group's bytes): its code kept
        except ValueError as exc:  # e.g. a tag over the length limit
            raise InvalidRequest(str(exc).splitlines()[0]) from None
        if kind == pb.MessageType.TRANSACTION:
            tx = await self.uc.half_sending.send_rocketmq_half(publisher, target, outgoing)
            return spb.SendResultEntry(status=OK, message_id=tx.msg_id, transaction_id=tx.transaction_id, offset=tx.half_offset)
        result = await self.uc.sending.send_one(publisher, outgoing)
        handle = recall_handle_of(result.topic, result.queue_id, result.queue_offset, result.commit_log_offset, result.properties)
        return spb.SendResultEntry(status=OK, message_id=message.system_properties.message_id, offset=result.queue_offset,
                                   recall_handle=handle or "")

    @answers(spb.EndTransactionResponse)
    async def EndTransaction(self, request: spb.EndTransactionRequest, context: Any) -> spb.EndTransactionResponse:  # noqa: N802
        state = {pb.TransactionResolution.COMMIT: "commit", pb.TransactionResolution.ROLLBACK: "rollback"}.get(request.resolution)
        if state is None:
            return spb.EndTransactionResponse(status=pb.Status(code=pb.Code.BAD_REQUEST, message="resolution must be COMMIT or ROLLBACK"))
        await self.uc.ending.end(*self._who(context, "EndTransaction"), request.transaction_id, request.topic.name, state,
                                 from_check=request.source == pb.TransactionSource.SOURCE_SERVER_CHECK)
        return spb.EndTransactionResponse(status=OK)

    @answers(spb.RecallMessageResponse)
    async def RecallMessage(self, request: spb.RecallMessageRequest, context: Any) -> spb.RecallMessageResponse:  # noqa: N802
        """RocketMQ 5.3's recall of a timed message by the handle its send answered (the HTTP route's use case)."""
        try:
            publisher = self.uc.sending.rocketmq_publisher(*self._who(context, "RecallMessage"), request.topic.name, False)
            recalled = await self.uc.sending.recall(publisher, request.recall_handle)
        except FlushTimedOut:
            return spb.RecallMessageResponse(status=pb.Status(code=pb.Code.MASTER_PERSISTENCE_TIMEOUT, message="flush timed out"))
        return spb.RecallMessageResponse(status=OK, message_id=recalled.msg_id)

    # --- consuming -------------------------------------------------------------------
    async def ReceiveMessage(self, request: spb.ReceiveMessageRequest, context: Any) -> AsyncIterator[spb.ReceiveMessageResponse]:  # noqa: N802
        invisible = mm.seconds(request.invisible_duration) or DEFAULT_INVISIBLE
        wait = min(mm.seconds(request.long_polling_timeout), MAX_LONG_POLL)
        expression = request.filter_expression.expression if request.HasField("filter_expression") else None
        group, topic = request.group.name, request.message_queue.topic.name
        try:
            subscriber = self.rt.access.subscriber(*self._who(context, "ReceiveMessage"), group, topic)
            tags = tag_filter(expression)
            receiving = self.uc.receiving
            deliveries = await receiving.deliveries_for(subscriber, max(1, min(request.batch_size or 32, 1024)), invisible, wait)
        except BrokerError as exc:
            yield _refusal(spb.ReceiveMessageResponse, exc)
            return
        wanted = receiving.wanted(subscriber, deliveries, tags)
        if not wanted:
            yield spb.ReceiveMessageResponse(status=pb.Status(code=pb.Code.MESSAGE_NOT_FOUND, message="no new message"))
            return
        now = Timestamp()
        now.GetCurrentTime()
        yield spb.ReceiveMessageResponse(delivery_timestamp=now)  # the push consumer's latency metric reads it
        for d in wanted:
            yield spb.ReceiveMessageResponse(message=mm.to_protobuf(d.message, receipt_handle=d.receipt_handle,
                                                                    delivery_attempt=d.delivery_attempt, invisible_seconds=invisible))
        yield spb.ReceiveMessageResponse(status=OK)

    @answers(spb.AckMessageResponse)
    async def AckMessage(self, request: spb.AckMessageRequest, context: Any) -> spb.AckMessageResponse:  # noqa: N802
        subscriber = self.rt.access.subscriber(*self._who(context, "AckMessage"), request.group.name, request.topic.name)
        entries = []
        for entry in request.entries:
            try:
                ok = await self.uc.settling.ack_one(subscriber, entry.receipt_handle)
                status = OK if ok else pb.Status(code=pb.Code.INVALID_RECEIPT_HANDLE, message="the receipt handle is expired or settled")
            except BrokerError as exc:
                status = status_of(exc)
            entries.append(spb.AckMessageResultEntry(message_id=entry.message_id, receipt_handle=entry.receipt_handle, status=status))
        overall = OK if all(e.status.code == pb.Code.OK for e in entries) else (
            entries[0].status if len(entries) == 1 else pb.Status(code=pb.Code.MULTIPLE_RESULTS, message="see entries"))
        return spb.AckMessageResponse(status=overall, entries=entries)

    @answers(spb.ChangeInvisibleDurationResponse)
    async def ChangeInvisibleDuration(self, request: spb.ChangeInvisibleDurationRequest, context: Any) -> spb.ChangeInvisibleDurationResponse:  # noqa: N802
        subscriber = self.rt.access.subscriber(*self._who(context, "ChangeInvisibleDuration"), request.group.name, request.topic.name)
        ok = self.uc.settling.change_invisible(subscriber, request.receipt_handle, mm.seconds(request.invisible_duration))
        if not ok:
            return spb.ChangeInvisibleDurationResponse(status=pb.Status(code=pb.Code.INVALID_RECEIPT_HANDLE, message="expired or settled"))
        return spb.ChangeInvisibleDurationResponse(status=OK, receipt_handle=request.receipt_handle)

    @answers(spb.ForwardMessageToDeadLetterQueueResponse)
    async def ForwardMessageToDeadLetterQueue(self, request: spb.ForwardMessageToDeadLetterQueueRequest,  # noqa: N802
                                              context: Any) -> spb.ForwardMessageToDeadLetterQueueResponse:
        subscriber = self.rt.access.subscriber(*self._who(context, "ForwardMessageToDeadLetterQueue"), request.group.name,
                                               request.topic.name)
        ok = self.uc.settling.dead_letter(subscriber, request.receipt_handle)
        if not ok:
            return spb.ForwardMessageToDeadLetterQueueResponse(status=pb.Status(code=pb.Code.INVALID_RECEIPT_HANDLE, message="expired or settled"))
        return spb.ForwardMessageToDeadLetterQueueResponse(status=OK)

    # --- not served ------------------------------------------------------------------
    async def _not_implemented(self, response: Callable[..., Any], what: str) -> Any:
        return response(status=pb.Status(code=pb.Code.NOT_IMPLEMENTED, message=f"halfmq does not serve {what}"))

    async def UpdateOffset(self, request: Any, context: Any) -> Any:  # noqa: N802
        return await self._not_implemented(spb.UpdateOffsetResponse, "UpdateOffset")

    async def GetOffset(self, request: Any, context: Any) -> Any:  # noqa: N802
        return await self._not_implemented(spb.GetOffsetResponse, "GetOffset")

    async def QueryOffset(self, request: Any, context: Any) -> Any:  # noqa: N802
        return await self._not_implemented(spb.QueryOffsetResponse, "QueryOffset")


    async def SyncLiteSubscription(self, request: Any, context: Any) -> Any:  # noqa: N802
        return await self._not_implemented(spb.SyncLiteSubscriptionResponse, "SyncLiteSubscription")

    async def PullMessage(self, request: Any, context: Any) -> AsyncIterator[Any]:  # noqa: N802
        yield await self._not_implemented(spb.PullMessageResponse, "PullMessage")


def endpoints_of(addresses: Sequence[tuple[str, int]]) -> pb.Endpoints:
    """One Endpoints naming every node: Apache's clients open one pick-first channel over all of them (ipv4:a,b,c),
    which connects to the one that listens, the leader."""
    return pb.Endpoints(scheme=pb.AddressScheme.IPv4, addresses=[pb.Address(host=h, port=p) for h, p in addresses])


async def start_server(current: Callable[[], Any], sessions: TelemetrySessions, host: str, port: int,
                       addresses: Sequence[tuple[str, int]] = ()) -> tuple[grpc.aio.Server, MessagingService]:
    """Serve the front on ``host:port`` (RuntimeError when the port cannot be bound)."""
    server = grpc.aio.server(options=[
        ("grpc.max_receive_message_length", current().settings.max_request_bytes),
        # gRPC grows a stream's receive window with its bandwidth-delay estimate (to tens of MB on loopback), and holds
        # what a client sends up to it while the handler does not read: a telemetry stream whose client never reads
        # stops being read (telemetry_sessions), so 100 of them held 2-3 GB (issue 42). Without the probe the window
        # stays at gRPC's default (64 KiB) per stream.
        ("grpc.http2.bdp_probe", 0),
    ])
    service = MessagingService(current, sessions, host, port, addresses)
    rpc.add_MessagingServiceServicer_to_server(service, server)
    bound = server.add_insecure_port(f"{host}:{port}")
    if not bound:
        raise RuntimeError(f"cannot bind the gRPC port {host}:{port}")
    await server.start()
    return server, service
