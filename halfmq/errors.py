"""Typed broker errors shared by the server and the client: each has a stable ``code`` that clients match on, the
HTTP status the API answers with, and ``retriable`` (whether trying again, unchanged, can help). The client maps a
problem body back to the same class by its code, so both sides raise the same types."""

from __future__ import annotations

from typing import Any, ClassVar


class BrokerError(Exception):
    """Every error the broker answers (problem+json, a stable ``code`` to branch on) or the SDK raises: one to catch.

    ``retriable``: whether the same request may succeed if sent again (the SDK's retries read it)."""

    code: ClassVar[str] = "BROKER_ERROR"
    status: ClassVar[int] = 500
    retriable: ClassVar[bool] = False
    title: ClassVar[str] = "Broker error"
    retry_after: int | None = None  # seconds, sent as Retry-After: the class's, or the instance's when it knows when

    def __init__(self, detail: str = "", *, retry_after: int | None = None, **extra: Any) -> None:
        super().__init__(detail or self.title)
        self.detail = detail or self.title
        self.extra = extra
        if retry_after is not None:
            self.retry_after = retry_after

    def to_problem(self, instance: str | None = None) -> dict[str, Any]:
        return problem_body(self.code, self.title, self.status, self.detail, retriable=self.retriable, instance=instance,
                            **self.extra)


PROBLEM_JSON = "application/problem+json"


def problem_body(code: str, title: str, status: int, detail: str, *, retriable: bool = False, instance: str | None = None,
                 **extra: Any) -> dict[str, Any]:
    """An RFC 9457 problem as every halfmq server answers it (the broker, its gates, the services, the SDK's check
    endpoint): one shape, so a client reads ``code`` the same way from each."""
    body: dict[str, Any] = {"type": f"https://halfmq.dev/problems/{code.lower().replace('_', '-')}", "title": title,
                            "status": status, "detail": detail, "code": code, "retriable": retriable}
    if instance:
        body["instance"] = instance
    body.update(extra)
    return body


# 400 family: the request itself is wrong; repeating it cannot help.
class InvalidRequest(BrokerError):
    """The request itself is wrong (400): repeating it cannot help; its subclasses name what is wrong."""

    code = "INVALID_REQUEST"
    status = 400
    title = "The request is not valid"


class MalformedJson(InvalidRequest):
    code = "MALFORMED_JSON"
    title = "The request body is not valid JSON"


class InvalidTopicName(InvalidRequest):
    """A topic name outside 1-127 of ``A-Z a-z 0-9 _ -`` (400); the SDK raises it before sending."""

    code = "INVALID_TOPIC_NAME"
    title = "Invalid topic name"


class InvalidQueueCount(InvalidRequest):
    code = "INVALID_QUEUE_COUNT"
    title = "Invalid queue count"


class InvalidRetention(InvalidRequest):
    """A topic's ``retention_ms`` or ``retention_bytes`` outside its bounds (400; nothing changed)."""

    code = "INVALID_RETENTION"
    title = "Invalid topic retention"


class InvalidQueueId(InvalidRequest):
    code = "INVALID_QUEUE_ID"
    title = "The queue does not exist in this topic"


class BadBodyEncoding(InvalidRequest):
    code = "BAD_BODY_ENCODING"
    title = "The message body does not match its encoding"


class InvalidGroupName(InvalidRequest):
    code = "INVALID_GROUP_NAME"
    title = "Invalid group name"


class InvalidTransactionalId(InvalidRequest):
    code = "INVALID_TRANSACTIONAL_ID"
    title = "Invalid transactional id"


class OriginNotAllowed(BrokerError):
    """A WebSocket opened by a web page (it carries an ``Origin``): a browser may open one to any address, unlike a
    request whose answer it reads, so a set's replication stream is for its nodes alone (they send no Origin)."""

    code = "ORIGIN_NOT_ALLOWED"
    status = 403
    title = "This WebSocket is not served to web pages"


class HostNotAllowed(InvalidRequest):
    """The request's Host is none of the server's names (the broker's, a service's): a page on a rebinding domain must not
    reach a loopback server."""

    code = "HOST_NOT_ALLOWED"
    title = "The server does not answer to this Host"


class ReservedProperty(InvalidRequest):
    code = "RESERVED_PROPERTY"
    title = "The property name is reserved for the broker"


class InvalidProperty(InvalidRequest):
    code = "INVALID_PROPERTY"
    title = "A property the broker interprets has a value it cannot use"


class InvalidMessageGroup(InvalidRequest):
    code = "INVALID_MESSAGE_GROUP"
    title = "The message group is not 1 to 64 bytes of UTF-8 without control characters"


class InvalidTagFilter(InvalidRequest):
    """A receive's tag filter past its bounds (wire.MAX_FILTER_TAGS tags, wire.MAX_TAG_LENGTH characters a tag)."""

    code = "INVALID_TAG_FILTER"
    title = "The tag filter is not valid"


class InvalidDeliveryTime(InvalidRequest):
    code = "INVALID_DELIVERY_TIME"
    title = "The delivery time or delay is not one the broker accepts"


class TooManyKeys(InvalidRequest):
    """More keys than ``max_keys_per_message``: each key is an index entry written under the store's write lock."""

    code = "TOO_MANY_KEYS"
    title = "The message carries more keys than the broker accepts"


class TopicRequired(InvalidRequest):
    """A lookup (a journey, a search by key) that names no topic, by a principal who may look up more topics than the
    broker searches at once (``lookup_topics``): name the message's topic."""

    code = "TOPIC_REQUIRED"
    title = "Name the message's topic: the principal may look up more topics than one lookup searches"


class InvalidReceiptHandle(InvalidRequest):
    code = "INVALID_RECEIPT_HANDLE"
    title = "The receipt handle is malformed"


class InvalidRecallHandle(InvalidRequest):
    """A recall handle this broker's log does not back: malformed, edited, of another topic, or naming no timed message."""

    code = "INVALID_RECALL_HANDLE"
    title = "The recall handle names no timed message of this topic"


class UnsupportedMediaType(BrokerError):
    code = "UNSUPPORTED_MEDIA_TYPE"
    status = 415
    title = "The request body must be application/json"


class SystemTopicForbidden(BrokerError):
    code = "SYSTEM_TOPIC_FORBIDDEN"
    status = 403
    title = "System topics are reserved for the broker"


class MessageTooLarge(BrokerError):
    """The message is larger than the broker's limit (413)."""

    code = "MESSAGE_TOO_LARGE"
    status = 413
    title = "The message is larger than the broker accepts"


class PropertiesTooLarge(MessageTooLarge):
    """The keys, tag and properties together are over ``max_properties_bytes`` (RocketMQ caps them at 32 KiB too)."""

    code = "PROPERTIES_TOO_LARGE"
    title = "The message's keys, tag and properties are larger than the broker accepts"


class RequestTooLarge(BrokerError):
    """The request body is over ``max_request_bytes``; refused while reading, before it is buffered whole."""

    code = "REQUEST_TOO_LARGE"
    status = 413
    title = "The request body is larger than the broker accepts"


class RequestBodyTimeout(BrokerError):
    """The body did not arrive within ``request_body_timeout`` of its head; nothing was done, so a retry is safe."""

    code = "REQUEST_BODY_TIMEOUT"
    status = 408
    retriable = True
    title = "The request body did not arrive in time"


class TopicNotFound(BrokerError):
    """No such topic, and the broker does not create topics on first send (404)."""

    code, status, title = "TOPIC_NOT_FOUND", 404, "Topic not found"


class ConsumerGroupNotFound(BrokerError):
    """No consumer group of this name has received yet (404)."""

    code, status, title = "CONSUMER_GROUP_NOT_FOUND", 404, "Consumer group not found"


class GroupHasInFlight(BrokerError):
    """An offset reset (or a group's deletion) would drop deliveries a consumer still holds: refused unless forced."""

    code, status, title = "GROUP_HAS_DELIVERIES_IN_FLIGHT", 409, "The consumer group has deliveries in flight"


class TopicInUse(BrokerError):
    """A topic's deletion would drop pending half messages or deliveries a consumer still holds: refused unless forced."""

    code, status, title = "TOPIC_IN_USE", 409, "The topic has pending half messages or deliveries in flight"


class InvalidOffsetReset(BrokerError):
    """An offset reset that names no target it can be planned from (a missing timestamp, a queue the topic lacks)."""

    code, status, title = "INVALID_OFFSET_RESET", 400, "The offset reset is not valid"


class DlqRedriveRunning(BrokerError):
    """One redrive of a group's DLQ at a time: watch the running one, or stop it first."""

    code, status, title = "DLQ_REDRIVE_RUNNING", 409, "A redrive of this consumer group's DLQ is running"


class TooManyDlqRedrives(BrokerError):
    code, status, title = "TOO_MANY_DLQ_REDRIVES", 429, "Too many DLQ redrives are running"
    retriable = True


class TooManyConsumerGroups(BrokerError):
    """A receive would begin one more consumer group than ``HALFMQ_BROKER_MAX_CONSUMER_GROUPS`` (each group's progress is
    held in memory): delete groups nobody runs, or raise the bound."""

    code, status, title = "TOO_MANY_CONSUMER_GROUPS", 429, "The broker holds as many consumer groups as it may"


class DlqRedriveNotFound(BrokerError):
    code, status, title = "DLQ_REDRIVE_NOT_FOUND", 404, "No redrive of this consumer group's DLQ"


class InvalidDlqRedrive(BrokerError):
    code, status, title = "INVALID_DLQ_REDRIVE", 400, "The DLQ redrive is not valid"


class TransactionNotFound(BrokerError):
    """No half-message transaction with this id (404)."""

    code, status, title = "TRANSACTION_NOT_FOUND", 404, "Transaction not found"


class MessageNotFound(BrokerError):
    """No record of this message id in the broker's log, or a message on a topic the credentials may not read."""

    code, status, title = "MESSAGE_NOT_FOUND", 404, "No message with this id (or none this principal may read)"


class AmbiguousMessageId(BrokerError):
    """Messages on several topics the principal may look up carry this id (a producer chose it; the broker's own ids
    are random): ``topics`` names them, and a lookup that names one of them answers its journey."""

    code, status, title = "AMBIGUOUS_MESSAGE_ID", 409, "Messages on several topics have this id: name the topic"


class ProducerGroupMismatch(BrokerError):
    code = "PRODUCER_GROUP_MISMATCH"
    status = 403
    title = "The producer group does not own this transaction"


class TransactionConflict(BrokerError):
    code = "TRANSACTION_CONFLICT"
    status = 409
    title = "The transaction already ended the other way"


class RecallTooLate(BrokerError):
    """The timed message is due already (delivered, or about to be): a recall can no longer keep it from consumers."""

    code = "RECALL_TOO_LATE"
    status = 409
    title = "The timed message is due already and cannot be recalled"


class BehindLogStart(BrokerError):
    """A broker set's follower asked for log bytes below the leader's log start (retention deleted them): it takes the
    leader's state snapshot and begins its log at ``log_start`` (Kafka's OFFSET_OUT_OF_RANGE, Raft's InstallSnapshot)."""

    code = "REPLICA_BEHIND_LOG_START"
    status = 416
    title = "The log below the leader's log start is deleted: take its state snapshot and begin there"

    def __init__(self, detail: str = "", log_start: int = 0, **extra: Any) -> None:
        super().__init__(detail, log_start=log_start, **extra)


class StateSnapshotNotFound(BrokerError):
    """The leader has no state snapshot (none written yet), or no longer the one a follower was taking part by part."""

    code = "STATE_SNAPSHOT_NOT_FOUND"
    status = 404
    retriable = True
    title = "No such state snapshot on this node"


# Producer transactions (Kafka semantics, DESIGN section 11)
class UnknownTransactionalId(BrokerError):
    code = "UNKNOWN_TRANSACTIONAL_ID"
    status = 404
    title = "No producer has initialised this transactional id"


class ProducerFenced(BrokerError):
    """Fatal for the producer: a newer instance initialised the same transactional id (a higher epoch)."""

    code = "PRODUCER_FENCED"
    status = 409
    title = "A newer producer with the same transactional id fenced this one"


class InvalidProducerEpoch(BrokerError):
    """The producer id or epoch was never handed out for this transactional id (not older: unknown)."""

    code = "INVALID_PRODUCER_EPOCH"
    status = 409
    title = "The producer id and epoch do not belong to this transactional id"


class InvalidTxnState(BrokerError):
    """The call does not fit the transaction's state (409): no open transaction, or one already ending."""

    code = "INVALID_TXN_STATE"
    status = 409
    title = "The request is not allowed in the transaction's current state"


class TransactionAborted(InvalidTxnState):
    """Abortable: the transaction was aborted (timeout, restart, operator, or by the producer); begin a new one."""

    code = "TRANSACTION_ABORTED"
    title = "The transaction was aborted"


class OutOfOrderSequence(BrokerError):
    code = "OUT_OF_ORDER_SEQUENCE"
    status = 409
    title = "The request's sequence number is not the next one expected"


class UnknownProducerId(BrokerError):
    """The idempotent producer id was never handed out, or expired after being idle: get a new one (Kafka's UNKNOWN_PRODUCER_ID)."""

    code = "UNKNOWN_PRODUCER_ID"
    status = 409
    title = "The producer id is unknown or expired"


class DuplicateSequenceNumber(BrokerError):
    """A numbered half send stored long ago, whose answer (its transaction id) is no longer remembered."""

    code = "DUPLICATE_SEQUENCE_NUMBER"
    status = 409
    title = "The send was stored before, but its answer is no longer kept"


class SequenceNumberReused(BrokerError):
    """A numbered send reuses a number its producer id already used for another request: another kind of send
    (plain or half), or another topic or producer group. It is neither stored nor answered with the other's answer."""

    code = "SEQUENCE_NUMBER_REUSED"
    status = 409
    title = "The sequence number was already used for a different request"


class TransactionTooLarge(BrokerError):
    code = "TRANSACTION_TOO_LARGE"
    status = 413
    title = "The transaction holds more than the broker accepts in one commit"


class OpenTransactionsFull(BrokerError):
    """Open producer transactions already hold the broker's (or this principal's) cap of message bytes; nothing was kept.

    Retriable: the bytes come back as open transactions commit, abort or time out. ``scope`` says which cap
    (``broker`` or ``principal``); ``limit_bytes``, ``held_bytes`` and ``request_bytes`` say by how much.
    """

    code = "OPEN_TRANSACTIONS_FULL"
    status = 429
    retriable = True
    retry_after = 1
    title = "Open producer transactions already hold as many bytes as the broker allows"


class TooManyProducerIds(BrokerError):
    """The principal already holds as many live producer ids as the broker allows one principal
    (``idempotent_producer_ids_per_principal``) and none has been idle long enough to be forgotten for a new one.

    Retriable: Retry-After says when the least recently used one may be forgotten (each SDK Producer holds one id;
    a Producer whose send fails for good takes a new one).
    """

    code = "TOO_MANY_PRODUCER_IDS"
    status = 429
    retriable = True
    title = "The principal holds as many producer ids as the broker allows"


class SendWindowsFull(BrokerError):
    """The principal's producers already remember as many numbered sends as the broker allows one principal
    (``idempotent_sequences_per_principal``); nothing was stored. Retry-After, when present, says when one of its
    idle producer ids may be forgotten to make room."""

    code = "SEND_WINDOWS_FULL"
    status = 429
    retriable = True
    title = "The principal's producers remember as many numbered sends as the broker allows"


class TooManyTelemetryStreams(BrokerError):
    """A RocketMQ client (or its principal) already has as many telemetry streams open as the broker allows
    (``grpc_telemetry_streams_per_principal``, ``grpc_telemetry_streams_per_client``): the new one is refused."""

    code = "TOO_MANY_TELEMETRY_STREAMS"
    status = 429
    retriable = True
    retry_after = 5
    title = "Too many telemetry streams are open"


class InvalidTransactionTimeout(InvalidRequest):
    code = "INVALID_TRANSACTION_TIMEOUT"
    title = "transaction_timeout_ms is out of range"


class ReceiptNotHeld(BrokerError):
    """An ack in a transaction names a delivery the group no longer holds (expired, settled, or from before a restart)."""

    code = "RECEIPT_EXPIRED"
    status = 409
    title = "The receipt handle no longer names a delivery in flight"


class ReceiptInOtherTransaction(BrokerError):
    code = "RECEIPT_IN_TRANSACTION"
    status = 409
    title = "The receipt handle is already acked in another open transaction"


class TopicAlreadyExists(BrokerError):
    code = "TOPIC_EXISTS"
    status = 409
    title = "Topic already exists with another queue count or retention"


class CheckUrlRefused(BrokerError):
    """The broker will not dial this check-back URL (not in check_url_allow, unresolvable, or an address it must not reach): SSRF protection."""

    code = "CHECK_URL_REFUSED"
    status = 400
    title = "The check-back URL is not allowed"


class Unauthenticated(BrokerError):
    """No token, or one the broker does not know (401); the SDK's message says how to pass one."""

    code = "UNAUTHENTICATED"
    status = 401
    title = "A valid bearer token is required"


class CheckSignatureInvalid(Unauthenticated):
    """Raised by the SDK's check app: the check request is unsigned, stale, replayed or tampered with."""

    code = "CHECK_SIGNATURE_INVALID"
    title = "The check request is not signed by the broker"


class AccessDenied(BrokerError):
    """The credentials are known but their policies do not allow this topic, group or action (403)."""

    code = "ACCESS_DENIED"
    status = 403
    title = "The principal's policies do not allow this"


class ProducerIdNotOwned(AccessDenied):
    """The producer id was handed to another principal: only the one that obtained it may number sends with it."""

    code = "PRODUCER_ID_NOT_OWNED"
    title = "The producer id belongs to another principal"


class RouteNotFound(BrokerError):
    code = "NOT_FOUND"
    status = 404
    title = "No such resource"


class MethodNotAllowed(BrokerError):
    code = "METHOD_NOT_ALLOWED"
    status = 405
    title = "Method not allowed"


# 5xx family: the broker could not do it now; trying again may help.
class FlushDiskTimeout(BrokerError):
    code = "FLUSH_DISK_TIMEOUT"
    status = 503
    retriable = True
    title = "The write did not reach disk in time"


class NotLeader(BrokerError):
    """A node of a broker set that does not lead it (or can no longer prove it does); ``leader_url`` says where to go
    (None while no leader is known)."""

    code = "NOT_LEADER"
    status = 421
    retriable = True
    title = "This broker is not the leader of its set"

    def __init__(self, detail: str = "", leader_url: str | None = None, **extra: Any) -> None:
        super().__init__(detail, leader_url=leader_url, **extra)


class StoreUnavailable(BrokerError):
    """The disk refused a write (full, over quota, failing); nothing of the request was acknowledged."""

    code = "STORE_UNAVAILABLE"
    status = 503
    retriable = True
    retry_after = 1
    title = "The store is not accepting writes"


class DiskAlmostFull(StoreUnavailable):
    """The data dir's disk is past HALFMQ_BROKER_DISK_REFUSE_SENDS_RATIO: new messages are refused until it is under it
    again (retention deletes early meanwhile); receives, acks and transaction ends still work. Nothing was stored."""

    code = "DISK_ALMOST_FULL"
    retry_after = 1  # the broker's: its next reading of the disk (HALFMQ_BROKER_DISK_CHECK_INTERVAL)
    title = "The broker's disk is almost full: sends are paused"


class DamagedRecord(BrokerError):
    """A stored record this request needs failed its CRC; the rest of the store is served as usual."""

    code = "DAMAGED_RECORD"
    status = 500
    title = "A stored record needed by this request is damaged"


class BrokerUnavailable(BrokerError):
    """Raised by the client only: the broker could not be reached or did not answer.

    ``cause`` is the HTTP library's own exception (kept off the traceback, where it
    is noise); ``sent`` is False only when the request certainly never left.
    """

    __module__ = "halfmq.client"  # where a user imports it from, and what a traceback names
    code = "BROKER_UNAVAILABLE"
    status = 503
    retriable = True
    title = "The broker could not be reached"

    def __init__(self, detail: str = "", *, cause: BaseException | None = None, sent: bool = True, **extra: Any) -> None:
        super().__init__(detail, **extra)
        self.cause = cause
        self.sent = sent


def _all_subclasses(cls: type[BrokerError]) -> list[type[BrokerError]]:
    return [each for sub in cls.__subclasses__() for each in (sub, *_all_subclasses(sub))]


def error_class_for(code: str) -> type[BrokerError]:
    """The error class a problem ``code`` stands for (BrokerError if unknown)."""
    return next((cls for cls in _all_subclasses(BrokerError) if cls.code == code), BrokerError)


class DlqMessageNotFound(BrokerError):
    code = "DLQ_MESSAGE_NOT_FOUND"
    status = 404
    title = "No such message in the consumer group's DLQ"
