"""The HTTP API v1 as data: which method and path each operation uses, what it
sends (a ``halfmq.wire`` request struct, the one the broker decodes) and how its answer becomes protocol models.

Keeping this free of I/O lets every client share one description of the
wire (``transport.AsyncTransport`` runs it), so they cannot disagree about a path or a field.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar
from urllib.parse import quote

from msgspec import UNSET, UnsetType

from halfmq.errors import BrokerError
from halfmq.wire import (
    MAX_NACK_REASON,
    BeginTxnRequest,
    ChangeInvisibleRequest,
    ClusterView,
    ConsumerGroupInfo,
    DeadLetters,
    DlqRedrive,
    DlqRedriveRequest,
    DlqResent,
    EndItem,
    EndRequest,
    EndTxnRequest,
    GroupDeleted,
    GroupList,
    HalfSendRequest,
    HalfSendResult,
    Health,
    Heartbeat,
    InitProducer,
    Message,
    MessageJourney,
    MessageSearch,
    MessageSummary,
    NackRequest,
    NewProducerId,
    OffsetReadResponse,
    OffsetReset,
    OutgoingMessage,
    ProducerIdResult,
    ProducerList,
    RecallRequest,
    RecallResult,
    ReceiveRequest,
    ReceiveResponse,
    ResetOffsetsRequest,
    SendRequest,
    SendResponse,
    SendResult,
    SettleRequest,
    SettleResponse,
    SettleResult,
    TopicAlter,
    TopicCreate,
    TopicDeleted,
    TopicInfo,
    TopicList,
    TransactionalIdList,
    TransactionList,
    TransactionView,
    TxnAcksRequest,
    TxnAcksResult,
    TxnBeginResult,
    TxnEndResult,
    TxnInitResult,
    TxnMessage,
    TxnMessagesRequest,
    TxnMessagesResult,
    decode,
)

T = TypeVar("T")
U = TypeVar("U")

HALF_BATCH_PATH = "/v1/transaction-batches/half"
END_BATCH_PATH = "/v1/transaction-batches/end"

__all__ = ["END_BATCH_PATH", "HALF_BATCH_PATH", "OPERATOR_VERBS", "Call", "alter_topic", "cluster_view", "consumer_group", "create_topic", "dead_letters",
           "delete_group", "delete_topic", "end_transaction",
           "find_messages", "force_abort", "get_topic", "get_transaction", "group_list", "half_send", "health", "health_report",
           "list_topics", "list_transactions", "message_journey", "message_search", "new_producer_id", "operate_transaction", "producer_heartbeat",
           "producer_list", "read", "receive", "redrive", "resend_dead_letter", "reset_offsets", "start_redrive",
           "stop_redrive", "send", "settle", "topic_list", "transaction", "transaction_list",
           "transactional_id_list", "txn_abort", "txn_acks", "txn_begin", "txn_commit", "txn_init", "txn_messages"]


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    """One request and the function that turns its decoded JSON answer into ``T``.

    ``body`` is a ``halfmq.wire`` request struct. ``timeout`` overrides the client's default, which long polls
    need. ``batch``: the batch route that also takes this call (``transaction_batches``), and how its item is made
    from the body (after an idempotent producer numbered it).
    """

    method: str
    path: str
    parse: Callable[[Any], T]
    body: Any = None
    params: dict[str, Any] | None = None
    timeout: float | None = None
    batch: tuple[str, Callable[[Any], Any]] | None = None


def _reading(call: Call[Any], parse: Callable[[Any], U]) -> Call[U]:
    """``call`` with another reading of its answer: one route, its path written once, read as a client wants it."""
    return Call(call.method, call.path, parse, call.body, call.params, call.timeout, call.batch)


def _as(shape: type[T]) -> Callable[[Any], T]:
    return lambda data: decode(data, shape)


def _seg(value: str | int) -> str:
    # Topic and group names may hold '%' (e.g. '%DLQ%group') or '/', which must
    # reach the server as one path segment.
    return quote(str(value), safe="")


def _topic_path(topic: str) -> str:
    return f"/v1/topics/{_seg(topic)}"


def _group_topic_path(group: str, topic: str, action: str) -> str:
    return f"/v1/consumer-groups/{_seg(group)}/topics/{_seg(topic)}/{action}"


def health_report() -> Call[Health]:
    return Call("GET", "/healthz", parse=_as(Health))


def health() -> Call[Any]:
    """``health_report`` as the broker wrote it (a probe's answer, fields this SDK does not know included)."""
    return _reading(health_report(), lambda data: data)


def cluster_view(timeout: float | None = None) -> Call[ClusterView]:
    """A broker set's view from the node asked (a single broker has no such route: ``RouteNotFound``)."""
    return Call("GET", "/v1/cluster", _as(ClusterView), timeout=timeout)


def create_topic(name: str, queues: int | None, retention_ms: int | None = None,
                 retention_bytes: int | None = None) -> Call[TopicInfo]:
    return Call("POST", "/v1/topics", parse=_as(TopicInfo),
                body=TopicCreate(name=name, queues=queues, retention_ms=retention_ms, retention_bytes=retention_bytes))


def alter_topic(name: str, retention_ms: int | None | UnsetType = UNSET,
                retention_bytes: int | None | UnsetType = UNSET) -> Call[TopicInfo]:
    """A topic's own retention changed: a limit left UNSET stays, None goes back to the broker's."""
    return Call("PATCH", _topic_path(name), parse=_as(TopicInfo),
                body=TopicAlter(retention_ms=retention_ms, retention_bytes=retention_bytes))


def recall(topic: str, recall_handle: str) -> Call[RecallResult]:
    return Call("POST", f"{_topic_path(topic)}/recall", parse=_as(RecallResult), body=RecallRequest(recall_handle=recall_handle))


def topic_list() -> Call[TopicList]:
    return Call("GET", "/v1/topics", parse=_as(TopicList))


def list_topics() -> Call[list[TopicInfo]]:
    return _reading(topic_list(), lambda data: decode(data, TopicList).topics)


def delete_topic(name: str, force: bool = False) -> Call[TopicDeleted]:
    return Call("DELETE", _topic_path(name), parse=_as(TopicDeleted), params={"force": "true"} if force else None)


def get_topic(name: str) -> Call[TopicInfo]:
    return Call("GET", _topic_path(name), parse=_as(TopicInfo))


def send(topic: str, messages: Sequence[OutgoingMessage]) -> Call[list[SendResult]]:
    expected = len(messages)

    def parse(data: Any) -> list[SendResult]:
        results = decode(data, SendResponse).results
        if len(results) != expected:
            # Results are matched to messages by position; a short answer
            # would silently pair a message with another one's outcome.
            raise BrokerError(f"broker answered {len(results)} send results for {expected} messages")
        return results

    # An idempotent producer adds its {producer_id, epoch, sequence} to the body (``Numbering.numbered``).
    return Call("POST", f"{_topic_path(topic)}/messages", parse=parse, body=SendRequest(messages=list(messages)))


def read(topic: str, queue_id: int, offset: int, max_messages: int) -> Call[OffsetReadResponse]:
    return Call("GET", f"{_topic_path(topic)}/queues/{_seg(queue_id)}/messages", parse=_as(OffsetReadResponse), params={"offset": offset, "max": max_messages})


def receive(group: str, topic: str, request: ReceiveRequest, *, timeout: float) -> Call[list[Message]]:
    return Call("POST", _group_topic_path(group, topic, "receive"), parse=lambda data: decode(data, ReceiveResponse).messages,
                body=request, timeout=timeout)


def settle(group: str, topic: str, action: Literal["ack", "nack"], handles: Sequence[str], reason: str | None = None) -> Call[list[SettleResult]]:
    """``reason``: a nack's why, kept in the messages' journeys (the broker takes at most ``MAX_NACK_REASON`` characters)."""
    body = (NackRequest(receipt_handles=list(handles), reason=reason[:MAX_NACK_REASON] or None) if action == "nack" and reason
            else SettleRequest(receipt_handles=list(handles)))
    return Call("POST", _group_topic_path(group, topic, action), parse=lambda data: decode(data, SettleResponse).results, body=body)


def change_invisible_duration(group: str, topic: str, handles: Sequence[str], seconds: float) -> Call[list[SettleResult]]:
    """RocketMQ 5's ChangeInvisibleDuration over HTTP: each handle ``OK`` (hidden ``seconds`` from now) or ``EXPIRED``."""
    return Call("POST", _group_topic_path(group, topic, "change-invisible-duration"), parse=lambda data: decode(data, SettleResponse).results,
                body=ChangeInvisibleRequest(receipt_handles=list(handles), invisible_seconds=seconds))


# Where is my message (GET /v1/messages): the routes are the leader's; the transport follows it.
def message_search(key: str, since_ms: int, limit: int, topic: str | None = None) -> Call[MessageSearch]:
    params: dict[str, Any] = {"key": key, "since": since_ms, "limit": limit}
    if topic is not None:
        params["topic"] = topic
    return Call("GET", "/v1/messages", parse=_as(MessageSearch), params=params)


def find_messages(key: str, since_ms: int, limit: int, topic: str | None = None) -> Call[list[MessageSummary]]:
    return _reading(message_search(key, since_ms, limit, topic), lambda data: decode(data, MessageSearch).messages)


def message_journey(msg_id: str, topic: str | None = None) -> Call[MessageJourney]:
    return Call("GET", f"/v1/messages/{_seg(msg_id)}", parse=_as(MessageJourney), params=None if topic is None else {"topic": topic})


def consumer_group(group: str) -> Call[ConsumerGroupInfo]:
    return Call("GET", f"/v1/consumer-groups/{_seg(group)}", parse=_as(ConsumerGroupInfo))


# Transactional messages (DESIGN section 4). A struct's constructor checks no bounds (the broker judges a producer
# group or URL, with its own codes), so a request the broker refuses still reaches it and is answered as such.
def _as_is(body: Any) -> Any:
    return body


def half_send(group: str, topic: str, message: OutgoingMessage, also: Sequence[TxnMessage] = ()) -> Call[HalfSendResult]:
    """``also``: more messages the same local transaction decides (halfmq's extension; each names its topic)."""
    body = HalfSendRequest(producer_group=group, topic=topic, message=message, also=list(also))
    return Call("POST", "/v1/transactions", parse=_as(HalfSendResult), body=body, batch=(HALF_BATCH_PATH, _as_is))


def _transaction_view(data: Any) -> dict[str, Any]:
    # The view carries operator fields (age, next check, ...) that change more
    # often than the protocol, so it stays a dict checked for what the SDK uses.
    if not isinstance(data, dict) or not isinstance(data.get("transaction_id"), str) or not isinstance(data.get("state"), str):
        raise BrokerError(f"response is not a transaction view: {str(data)[:200]}")
    return data


def end_transaction(transaction_id: str, group: str, state: str, *, from_check: bool = False) -> Call[dict[str, Any]]:
    def item(body: EndRequest) -> EndItem:
        return EndItem(transaction_id=transaction_id, producer_group=body.producer_group, state=body.state,
                       from_check=body.from_check)

    body = EndRequest(producer_group=group, state=state, from_check=from_check)  # type: ignore[arg-type]  # the broker judges it
    return Call("POST", f"/v1/transactions/{_seg(transaction_id)}/end", parse=_transaction_view, body=body,
                batch=(END_BATCH_PATH, item))


def transaction(transaction_id: str) -> Call[TransactionView]:
    return Call("GET", f"/v1/transactions/{_seg(transaction_id)}", parse=_as(TransactionView))


def get_transaction(transaction_id: str) -> Call[dict[str, Any]]:
    """``transaction`` for the transaction producer, which answers the view as a dict (``_transaction_view``)."""
    return _reading(transaction(transaction_id), _transaction_view)


def transaction_list(state: str, limit: int) -> Call[TransactionList]:
    return Call("GET", "/v1/transactions", parse=_as(TransactionList), params={"state": state, "limit": limit})


def list_transactions(state: str, limit: int) -> Call[list[dict[str, Any]]]:
    def parse(data: Any) -> list[dict[str, Any]]:
        if not isinstance(data, dict) or not isinstance(data.get("transactions"), list):
            raise BrokerError(f"response is not a transaction list: {str(data)[:200]}")
        return [_transaction_view(item) for item in data["transactions"]]

    return _reading(transaction_list(state, limit), parse)


def producer_heartbeat(group: str, client_id: str, check_url: str | None, *, timeout: float | None = None) -> Call[Any]:
    return Call("POST", "/v1/producers/heartbeat", parse=lambda data: data,
                body=Heartbeat(producer_group=group, client_id=client_id, check_url=check_url), timeout=timeout)


# The operators' calls (``admin.AsyncAdminClient``, `halfmq admin`): each answers its route's wire struct whole, as
# /openapi.json documents it. A set's follower serves the reads its router marks ``on_follower`` (topics, dead letters,
# the cluster view, health); the transport follows a 421 to the leader for the rest.
OperatorVerb = Literal["force-commit", "force-rollback", "recheck", "resend"]
OPERATOR_VERBS: tuple[OperatorVerb, ...] = ("force-commit", "force-rollback", "recheck", "resend")


def operate_transaction(transaction_id: str, verb: OperatorVerb) -> Call[TransactionView]:
    """An operator's action on a half message (commit or roll back now, check back now, deliver a discarded one again)."""
    if verb not in OPERATOR_VERBS:
        raise ValueError(f"verb must be one of {OPERATOR_VERBS}, not {verb!r}")
    return Call("POST", f"/v1/transactions/{_seg(transaction_id)}/{verb}", parse=_as(TransactionView))


def group_list(system: bool = False) -> Call[GroupList]:
    """Every consumer group; ``system``: the broker's own bookkeeping readers too."""
    return Call("GET", "/v1/consumer-groups", parse=_as(GroupList), params={"system": "true"} if system else None)


def dead_letters(group: str, offset: int, max_messages: int) -> Call[DeadLetters]:
    return Call("GET", f"/v1/consumer-groups/{_seg(group)}/dlq", parse=_as(DeadLetters), params={"offset": offset, "max": max_messages})


def resend_dead_letter(group: str, offset: int) -> Call[DlqResent]:
    return Call("POST", f"/v1/consumer-groups/{_seg(group)}/dlq/{_seg(offset)}/resend", parse=_as(DlqResent))


def reset_offsets(group: str, topic: str, to: str, *, queue_id: int | None = None, timestamp_ms: int | None = None,
                  ago_ms: int | None = None, offset: int | None = None, dry_run: bool = False, force: bool = False) -> Call[OffsetReset]:
    body = ResetOffsetsRequest(to=to, queue_id=queue_id, timestamp_ms=timestamp_ms, ago_ms=ago_ms, offset=offset,  # type: ignore[arg-type]  # the broker names a bad `to`
                               dry_run=dry_run, force=force)
    return Call("POST", _group_topic_path(group, topic, "reset-offsets"), parse=_as(OffsetReset), body=body)


def delete_group(group: str, force: bool = False) -> Call[GroupDeleted]:
    return Call("DELETE", f"/v1/consumer-groups/{_seg(group)}", parse=_as(GroupDeleted), params={"force": "true"} if force else None)


def _redrive_path(group: str) -> str:
    return f"/v1/consumer-groups/{_seg(group)}/dlq/redrive"


def start_redrive(group: str, max_messages: int | None = None, rate_per_second: float | None = None) -> Call[DlqRedrive]:
    body = DlqRedriveRequest(max_messages=max_messages, rate_per_second=rate_per_second)
    return Call("POST", _redrive_path(group), parse=_as(DlqRedrive), body=body)


def redrive(group: str) -> Call[DlqRedrive]:
    return Call("GET", _redrive_path(group), parse=_as(DlqRedrive))


def stop_redrive(group: str) -> Call[DlqRedrive]:
    return Call("DELETE", _redrive_path(group), parse=_as(DlqRedrive))


def producer_list() -> Call[ProducerList]:
    return Call("GET", "/v1/producers", parse=_as(ProducerList))


def transactional_id_list() -> Call[TransactionalIdList]:
    return Call("GET", "/v1/transactional-ids", parse=_as(TransactionalIdList))


def force_abort(transactional_id: str) -> Call[TxnEndResult]:
    return Call("POST", f"/v1/transactional-ids/{_seg(transactional_id)}/force-abort", parse=_as(TxnEndResult))


# Producer transactions (DESIGN section 11): every request of one instance carries its producer id and epoch.
def _txn(transactional_id: str, verb: str, shape: type[T], body: Any) -> Call[T]:
    return Call("POST", f"/v1/transactional-ids/{_seg(transactional_id)}/{verb}", parse=_as(shape), body=body)


def new_producer_id() -> Call[ProducerIdResult]:
    return Call("POST", "/v1/producer-ids", parse=_as(ProducerIdResult), body=NewProducerId())


def txn_init(transactional_id: str, timeout_ms: int | None) -> Call[TxnInitResult]:
    return _txn(transactional_id, "init", TxnInitResult, InitProducer(transaction_timeout_ms=timeout_ms))


def txn_begin(transactional_id: str, producer_id: int, epoch: int) -> Call[TxnBeginResult]:
    return _txn(transactional_id, "begin", TxnBeginResult, BeginTxnRequest(producer_id=producer_id, epoch=epoch, sequence=0))


def txn_messages(transactional_id: str, producer_id: int, epoch: int, sequence: int, messages: Sequence[TxnMessage]) -> Call[TxnMessagesResult]:
    return _txn(transactional_id, "messages", TxnMessagesResult,
                TxnMessagesRequest(producer_id=producer_id, epoch=epoch, sequence=sequence, messages=list(messages)))


def txn_acks(transactional_id: str, producer_id: int, epoch: int, sequence: int, handles: Sequence[str]) -> Call[TxnAcksResult]:
    return _txn(transactional_id, "acks", TxnAcksResult,
                TxnAcksRequest(producer_id=producer_id, epoch=epoch, sequence=sequence, receipt_handles=list(handles)))


def txn_commit(transactional_id: str, producer_id: int, epoch: int) -> Call[TxnEndResult]:
    return _txn(transactional_id, "commit", TxnEndResult, EndTxnRequest(producer_id=producer_id, epoch=epoch))


def txn_abort(transactional_id: str, producer_id: int, epoch: int) -> Call[TxnEndResult]:
    return _txn(transactional_id, "abort", TxnEndResult, EndTxnRequest(producer_id=producer_id, epoch=epoch))
