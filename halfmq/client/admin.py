"""The operators' client: what `halfmq admin` does, from Python (Kafka's ``AdminClient``, RocketMQ's ``mqadmin``).

Why in the SDK: an operator's tool is a client of the broker like any other, and the SDK's transport
already knows a broker set (issue 43). Built on it, the operator's calls follow ``$HALFMQ_URL``'s list
of nodes and the leader's 421 hints as sends do (``broker_urls``): a read a follower serves (topics,
dead letters, the set's view, health) is answered by the first node that can, a write or any other read
by the leader, during an election after it. ``answered_by`` says which node spoke. The calls are data
(``endpoints``); each returns its route's answer whole, as the ``halfmq.wire`` struct /openapi.json
names; every failure is one of ``halfmq.errors`` (``transport``).

Retries: a read is repeated on any retriable failure; an action (a forced commit, a resend) only when
the broker certainly did not get it (``transport.request_not_sent``), so an operator's click is never
done twice behind their back.

``AsyncAdminClient`` is the implementation; ``AdminClient`` runs it on the SDK's loop thread (``loop_thread``).
"""

from __future__ import annotations

from datetime import datetime
from typing import TypeVar, Unpack

from msgspec import UNSET, UnsetType

from halfmq.errors import RouteNotFound
from halfmq.wire import (
    ClusterView,
    ConsumerGroupInfo,
    DeadLetters,
    DlqRedrive,
    DlqResent,
    GroupDeleted,
    GroupList,
    Health,
    MessageJourney,
    MessageSearch,
    OffsetReset,
    ProducerList,
    RecallResult,
    TopicDeleted,
    TopicInfo,
    TopicList,
    TransactionalIdList,
    TransactionList,
    TransactionState,
    TransactionView,
    TxnEndResult,
)

from . import endpoints
from .endpoints import Call, OperatorVerb
from .loop_thread import Blocking, blocking, twin_property
from .messages import epoch_ms
from .retry import async_retrying
from .transport import AsyncClient, TransportOptions, request_not_sent

__all__ = ["AdminClient", "AsyncAdminClient"]

T = TypeVar("T")


class AsyncAdminClient(AsyncClient):
    """The operators' calls, with asyncio: transactions, topics, consumer groups, dead letters, producers, the set.

    ``base_url``: one broker or a set's nodes, comma-separated (None: ``$HALFMQ_URL``); the token needs ``admin``
    (``describe`` for the reads). The other options are ``AsyncClient``'s (``timeout``, ``retries``, ``token``, ``verify``).
    """

    def __init__(self, base_url: str | None = None, **options: Unpack[TransportOptions]) -> None:
        options.setdefault("pool_size", 1)  # an operator's calls come a few at a time
        options.setdefault("max_in_flight", 16)
        super().__init__(base_url, **options)

    @property
    def urls(self) -> list[str]:
        """The broker URLs given (a set's nodes, or one broker)."""
        return self._transport.urls

    @property
    def answered_by(self) -> str | None:
        """The URL of the node that answered (or refused) the latest call; None before any answer."""
        return self._transport.answered_by

    async def _act(self, call: Call[T]) -> T:
        """An action, repeated only when it never reached a broker (it may have been done otherwise)."""
        result: T = await async_retrying(self._retries, retry_on=request_not_sent)(self._transport.call, call)
        return result

    # --- half messages (RocketMQ's transactions) -------------------------------------------------------------------
    async def list_transactions(self, state: TransactionState | str = TransactionState.PENDING, limit: int = 100) -> TransactionList:
        """The transactions in ``state``, oldest first, at most ``limit``; ``count`` is how many there are in all."""
        return await self._call(endpoints.transaction_list(TransactionState(state).value, limit))

    async def describe_transaction(self, transaction_id: str) -> TransactionView:
        """One transaction: its state, age, check-backs and their last answer, its message (``TransactionNotFound``)."""
        return await self._call(endpoints.transaction(transaction_id))

    async def force_commit(self, transaction_id: str) -> TransactionView:
        """Commit a pending half message now: its consumers get it."""
        return await self._operate(transaction_id, "force-commit")

    async def force_rollback(self, transaction_id: str) -> TransactionView:
        """Roll a pending half message back now: nobody gets it."""
        return await self._operate(transaction_id, "force-rollback")

    async def recheck(self, transaction_id: str) -> TransactionView:
        """Ask the producer's check endpoint about a pending transaction now (the broker answers before the check ends)."""
        return await self._operate(transaction_id, "recheck")

    async def resend(self, transaction_id: str) -> TransactionView:
        """A discarded transaction (its checks ran out) back to pending, checked again at once."""
        return await self._operate(transaction_id, "resend")

    async def _operate(self, transaction_id: str, verb: OperatorVerb) -> TransactionView:
        return await self._act(endpoints.operate_transaction(transaction_id, verb))

    # --- topics ------------------------------------------------------------------------------------------------------
    async def list_topics(self) -> TopicList:
        """Every topic the token may see, with its queues' offsets (a follower answers it)."""
        return await self._call(endpoints.topic_list())

    async def describe_topic(self, name: str) -> TopicInfo:
        """One topic's queues and their offsets (``TopicNotFound``; a follower answers it)."""
        return await self._call(endpoints.get_topic(name))

    async def create_topic(self, name: str, queues: int | None = None, *, retention_ms: int | None = None,
                           retention_bytes: int | None = None) -> TopicInfo:
        """Create a topic with ``queues`` queues (the broker's default if None) and its own retention (None: the
        broker's; ``retention_bytes`` per queue); the same again is answered as it is."""
        return await self._act(endpoints.create_topic(name, queues, retention_ms, retention_bytes))

    async def alter_topic(self, name: str, *, retention_ms: int | None | UnsetType = UNSET,
                          retention_bytes: int | None | UnsetType = UNSET) -> TopicInfo:
        """Change a topic's own retention: a limit not named stays, None goes back to the broker's
        (``InvalidRetention`` outside its bounds). Older messages become unreadable at the next retention pass."""
        return await self._act(endpoints.alter_topic(name, retention_ms, retention_bytes))

    async def delete_topic(self, name: str, force: bool = False) -> TopicDeleted:
        """Delete topic ``name``: no longer listed or read, every group's offsets on it gone (a topic created again
        under the name starts empty). Refused (TopicInUse, 409) while it has pending half messages or deliveries in
        flight, unless ``force``."""
        return await self._act(endpoints.delete_topic(name, force))

    async def recall(self, topic: str, recall_handle: str) -> RecallResult:
        """Cancel a timed message of ``topic`` not yet due, by the recall handle its send answered (an operator's hand on
        a scheduled message its producer cannot reach any more): RecallTooLate once it is due."""
        return await self._act(endpoints.recall(topic, recall_handle))

    # --- consumer groups and their dead letters ---------------------------------------------------------------------
    async def list_groups(self, system: bool = False) -> GroupList:
        """Every consumer group with its lag, in-flight deliveries, retries and DLQ depth (``system``: the broker's own too)."""
        return await self._call(endpoints.group_list(system))

    async def describe_group(self, group: str) -> ConsumerGroupInfo:
        """A group's committed offset, lag and in-flight deliveries per topic and queue (``ConsumerGroupNotFound``)."""
        return await self._call(endpoints.consumer_group(group))

    async def list_dead_letters(self, group: str, offset: int = 0, max_messages: int = 100) -> DeadLetters:
        """A page of ``group``'s dead letters from ``offset`` (``page`` says where the next one starts; a follower answers it)."""
        return await self._call(endpoints.dead_letters(group, offset, max_messages))

    async def resend_dead_letter(self, group: str, offset: int) -> DlqResent:
        """Put the dead letter at ``offset`` back on its topic and queue: ``group`` gets it again."""
        return await self._act(endpoints.resend_dead_letter(group, offset))

    async def delete_group(self, group: str, force: bool = False) -> GroupDeleted:
        """Delete ``group``: its committed offsets and progress on every topic (a receive after this begins it again at
        each queue's first message). Refused (GroupHasInFlight, 409) while it holds deliveries, unless ``force``."""
        return await self._act(endpoints.delete_group(group, force))

    async def start_redrive(self, group: str, max_messages: int | None = None, rate_per_second: float | None = None) -> DlqRedrive:
        """Start resending ``group``'s dead letters (all there now, or the first ``max_messages``) to their topics at
        ``rate_per_second`` (the broker's HALFMQ_BROKER_DLQ_REDRIVE_RATE by default), in the background: ``redrive``
        watches it, ``stop_redrive`` stops it. One at a time per group (DlqRedriveRunning, 409)."""
        return await self._act(endpoints.start_redrive(group, max_messages, rate_per_second))

    async def redrive(self, group: str) -> DlqRedrive:
        """The group's latest DLQ redrive: its state (running, done, stopped, failed) and progress."""
        return await self._call(endpoints.redrive(group))

    async def stop_redrive(self, group: str) -> DlqRedrive:
        """Stop the group's running DLQ redrive after the resend under way."""
        return await self._act(endpoints.stop_redrive(group))

    async def reset_offsets(self, group: str, topic: str, to: str, *, queue_id: int | None = None, timestamp_ms: int | None = None,
                            ago_ms: int | None = None, offset: int | None = None, dry_run: bool = False, force: bool = False) -> OffsetReset:
        """Move ``group``'s committed offsets on ``topic`` (every queue, or ``queue_id``) ``to`` "earliest", "latest",
        "timestamp" (``timestamp_ms``), "duration" (``ago_ms`` before now) or "offset" (``offset``); ``dry_run`` answers
        the plan (per queue: from → to) and changes nothing. Refused (GroupHasInFlight, 409) while the group holds
        deliveries on those queues, unless ``force`` (they are delivered again)."""
        return await self._act(endpoints.reset_offsets(group, topic, to, queue_id=queue_id, timestamp_ms=timestamp_ms, ago_ms=ago_ms,
                                                       offset=offset, dry_run=dry_run, force=force))

    # --- producers -----------------------------------------------------------------------------------------------------
    async def list_producers(self) -> ProducerList:
        """The producers that sent a heartbeat, per producer group, with their check URLs."""
        return await self._call(endpoints.producer_list())

    async def list_transactional_ids(self) -> TransactionalIdList:
        """Kafka-style transactional ids: producer id, epoch, the open transaction and its age."""
        return await self._call(endpoints.transactional_id_list())

    async def force_abort(self, transactional_id: str) -> TxnEndResult:
        """Abort a transactional id's open transaction now (its producer is fenced off it)."""
        return await self._act(endpoints.force_abort(transactional_id))

    # --- where is my message -------------------------------------------------------------------------------------------
    async def message_journey(self, msg_id: str, topic: str | None = None) -> MessageJourney:
        """What the broker's log says happened to ``msg_id`` (``MessageNotFound``, ``AmbiguousMessageId``: name the topic)."""
        return await self._call(endpoints.message_journey(msg_id, topic))

    async def find_messages(self, key: str, limit: int = 50, topic: str | None = None, since: datetime | float | None = None) -> MessageSearch:
        """The messages sent with ``key`` (a key, or their id), newest first; ``since``: stored since then."""
        return await self._call(endpoints.message_search(key, epoch_ms(since, "since") or 0, limit, topic))

    # --- the broker set ------------------------------------------------------------------------------------------------
    async def describe_cluster(self) -> ClusterView | None:
        """The set as the answering node sees it (``answered_by``): term, leader, each node's offsets and lag; None from
        a single broker, which has no set to describe."""
        try:
            return await self._call(endpoints.cluster_view())
        except RouteNotFound:
            return None

    async def health(self) -> Health:
        """The answering node's health and its store's offsets (no token needed)."""
        return await self._call(endpoints.health_report())


class AdminClient(Blocking[AsyncAdminClient]):
    """``AsyncAdminClient`` for blocking code (`halfmq admin` is one)."""

    def __init__(self, base_url: str | None = None, **options: Unpack[TransportOptions]) -> None:
        """``AsyncAdminClient``'s options (``timeout``, ``retries``, ``token`` …)."""
        super().__init__(AsyncAdminClient(base_url, **options))

    urls = twin_property(AsyncAdminClient.urls)
    answered_by = twin_property(AsyncAdminClient.answered_by)

    list_transactions = blocking(AsyncAdminClient.list_transactions)
    describe_transaction = blocking(AsyncAdminClient.describe_transaction)
    force_commit = blocking(AsyncAdminClient.force_commit)
    force_rollback = blocking(AsyncAdminClient.force_rollback)
    recheck = blocking(AsyncAdminClient.recheck)
    resend = blocking(AsyncAdminClient.resend)
    list_topics = blocking(AsyncAdminClient.list_topics)
    describe_topic = blocking(AsyncAdminClient.describe_topic)
    create_topic = blocking(AsyncAdminClient.create_topic)
    alter_topic = blocking(AsyncAdminClient.alter_topic)
    delete_topic = blocking(AsyncAdminClient.delete_topic)
    recall = blocking(AsyncAdminClient.recall)
    list_groups = blocking(AsyncAdminClient.list_groups)
    describe_group = blocking(AsyncAdminClient.describe_group)
    list_dead_letters = blocking(AsyncAdminClient.list_dead_letters)
    resend_dead_letter = blocking(AsyncAdminClient.resend_dead_letter)
    reset_offsets = blocking(AsyncAdminClient.reset_offsets)
    start_redrive = blocking(AsyncAdminClient.start_redrive)
    delete_group = blocking(AsyncAdminClient.delete_group)
    redrive = blocking(AsyncAdminClient.redrive)
    stop_redrive = blocking(AsyncAdminClient.stop_redrive)
    list_producers = blocking(AsyncAdminClient.list_producers)
    list_transactional_ids = blocking(AsyncAdminClient.list_transactional_ids)
    force_abort = blocking(AsyncAdminClient.force_abort)
    message_journey = blocking(AsyncAdminClient.message_journey)
    find_messages = blocking(AsyncAdminClient.find_messages)
    describe_cluster = blocking(AsyncAdminClient.describe_cluster)
    health = blocking(AsyncAdminClient.health)
