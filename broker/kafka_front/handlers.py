"""The Kafka front's handlers for producing and consuming: each decodes nothing (dispatch.py did), calls the use cases
the HTTP and gRPC fronts call, and answers in kafka-python's response classes.

A halfmq topic is a Kafka topic, its queues are the partitions, a queue offset is the record's offset; the one broker
(or a set's leader) leads every partition and coordinates every group; a set's followers are the other brokers Metadata
names (set_view.py). Refusals of a
use case are answered per partition, topic or group with error_codes.py's code; the connection stays open.
What a client reads is what readers of every front see: the visible part of each queue (under a set's high
watermark), committed messages only, so the last stable offset is the high watermark (docs/decisions/048).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafka import errors as kafka_errors
from kafka.protocol.api_key import ApiKey
from kafka.protocol.consumer import FetchResponse, ListOffsetsResponse, OffsetCommitResponse, OffsetFetchResponse
from kafka.protocol.metadata import FindCoordinatorResponse, MetadataResponse
from kafka.protocol.producer import InitProducerIdResponse, ProduceResponse

from halfmq.broker.usecases.caller import Principal
from halfmq.broker.usecases.records import DamagedEntry, StoredMessage
from halfmq.errors import BrokerError, InvalidRequest
from halfmq.wire import SendRequest, TopicCreate

from .admin_handlers import AdminHandlers
from .calls import FrontHandlers
from .dispatch import Later
from .error_codes import error_of, kafka_code
from .errors import InvalidRecord, KafkaRefusal, OffsetOutOfRange, OutOfOrderSequence, ProducerEpochFenced, ServedElsewhere
from .group_handlers import GroupHandlers
from .leader_producer_ids import LeaderProducerIds
from .leader_topics import LeaderTopics
from .producer_sequences import ProducerSequences, SequenceVerdict, StoredBatch
from .record_batches import decode_batches, encode_batch
from .record_mapping import kafka_record, outgoing
from .request_header import RequestHeader
from .sasl import SaslHandlers, connection_token
from .set_view import NO_NODE, Broker, SetView
from .txn_handlers import TxnHandlers

NO_TOPIC_ID = uuid.UUID(int=0)
LATEST, EARLIEST = -1, -2
READ_CHUNK = 100
"""Records read from a queue at a time while a Fetch fills up to its byte bounds."""


@dataclass(frozen=True, slots=True)
class Node:
    """How Kafka's clients reach this broker: the host of its advertised URL and the Kafka port; its Kafka node id (0 for
    a single broker; in a set, the node's place among the members from 1, the same in every member's Metadata, so a
    new leader is another known node to the clients and they move to it as when a Kafka partition's leader changes)."""

    host: str
    port: int
    node_id: int = 0


class KafkaHandlers(FrontHandlers):
    """``current`` and ``principal`` as every handler class (calls.py); ``sequences``: the idempotent producers' batches;
    ``view``: a set's picture of the moment (a single broker's: ``node`` alone, leading); ``leader_ids`` and
    ``leader_topics``: a set's follower's way to an idempotent producer id and to a new topic from the leader
    (leader_producer_ids.py, leader_topics.py)."""

    def __init__(self, current: Callable[[], Any], node: Node, principal: Callable[[], Principal], sequences: ProducerSequences,
                 txns: TxnHandlers, clock: Callable[[], float] = time.monotonic, view: Callable[[], SetView] | None = None,
                 leader_ids: LeaderProducerIds | None = None, leader_topics: LeaderTopics | None = None) -> None:
        super().__init__(current, principal)
        single = SetView.single(Broker(node.node_id, node.host, node.port))
        self.view = view or (lambda: single)  # a set's: who leads, every member's address (set_view.py)
        self.clock = clock
        self.sequences = sequences
        self.txns = txns
        self.node = node
        self.leader_ids = leader_ids
        self.leader_topics = leader_topics

    # --- Metadata and FindCoordinator ---------------------------------------------------------------------------
    async def metadata(self, request: Any, header: RequestHeader) -> Any:
        """Every member as a broker (a single broker: itself), the leader as every partition's; an unknown topic is
        created when the client allows it: by the leader itself, by a set's follower on the leader (_queues)."""
        uc, who, scope = self.using(header, "Metadata")
        view = self.view()
        asked = request.topics
        if asked is None or (header.api_version == 0 and not asked):
            names = [t.name for t in uc.topics.list_visible(who).topics]
        else:
            names = [t.name for t in asked]
        auto = bool(getattr(request, "allow_auto_topic_creation", True))
        topics = [await self._topic_metadata(uc, who, scope, name, auto, view) for name in names]
        broker = MetadataResponse.MetadataResponseBroker
        return MetadataResponse(throttle_time_ms=0, cluster_id="halfmq", controller_id=view.partition_leader, topics=topics,
                                brokers=[broker(node_id=b.node_id, host=b.host, port=b.port, rack=None) for b in view.brokers])

    async def _topic_metadata(self, uc: Any, who: Principal, scope: dict[str, Any], name: str, auto: bool, view: SetView) -> Any:
        topic = MetadataResponse.MetadataResponseTopic
        partition = topic.MetadataResponsePartition
        try:
            queues = await self._queues(uc, who, scope, name, auto, view)
        except (BrokerError, KafkaRefusal) as exc:
            return topic(error_code=error_of(exc), name=name, topic_id=NO_TOPIC_ID, is_internal=False, partitions=[])
        replicas, isr, offline = view.replica_ids, view.isr_ids, view.offline_ids
        return topic(error_code=0, name=name, topic_id=NO_TOPIC_ID, is_internal=False, partitions=[
                         partition(error_code=view.partition_error, partition_index=q, leader_id=view.partition_leader,
                                   leader_epoch=view.epoch, replica_nodes=replicas, isr_nodes=isr, offline_replicas=offline)
                         for q in range(queues)])

    async def _queues(self, uc: Any, who: Principal, scope: dict[str, Any], name: str, auto: bool, view: SetView) -> int:
        """The topic's queue count. An unknown one, when ``auto``: created by this node when it leads; on a set's
        follower, on the leader as the connection's principal (leader_topics.py: the follower keeps nothing of it, and
        answers with the leader's count until its replica has the topic); LEADER_NOT_AVAILABLE while no leader is known."""
        try:
            return len(uc.topics.describe(who, scope, name).queues)
        except BrokerError as exc:
            unknown = kafka_code(exc) == int(kafka_errors.UnknownTopicOrPartitionError.errno)
            if not auto or not unknown or (not view.leading and self.leader_topics is None):
                raise
        if view.leading:
            info, _ = await uc.topics.create(who, scope, TopicCreate(name=name, queues=None))
            return len(info.queues)
        if self.leader_topics is None or not view.asks_leader:
            raise ServedElsewhere(int(kafka_errors.LeaderNotAvailableError.errno), "no leader is known to create the topic on")
        return await self.leader_topics.create(name, connection_token.get())

    async def find_coordinator(self, request: Any, header: RequestHeader) -> Any:
        """The leader coordinates every group and transactional id (COORDINATOR_NOT_AVAILABLE while none is known)."""
        coordinator = FindCoordinatorResponse.Coordinator
        keys = list(request.coordinator_keys or []) if header.api_version >= 4 else [request.key]
        leader = self.view().coordinator
        code = 0 if leader is not None else int(kafka_errors.CoordinatorNotAvailableError.errno)
        node_id, host, port = (leader.node_id, leader.host, leader.port) if leader is not None else (NO_NODE, "", -1)
        return FindCoordinatorResponse(
            throttle_time_ms=0, error_code=code, error_message=None, node_id=node_id, host=host, port=port,
            coordinators=[coordinator(key=key, node_id=node_id, host=host, port=port, error_code=code,
                                      error_message=None) for key in keys])

    # --- Produce ------------------------------------------------------------------------------------------------
    async def produce(self, request: Any, header: RequestHeader) -> Later:
        """Every partition's records are written now, in the request's order, and the answer is ``Later``: their
        flushes are awaited together while the connection reads the client's next requests (librdkafka sends one
        Produce per partition, five in flight), so one flush covers what a client has in flight, as the HTTP front's
        concurrent sends share theirs. Each partition's write is done at its task's first step, before its first
        await; one yield runs those steps, in the order the tasks were made, before the next request is read."""
        rt, who, scope = self.calling(header, "Produce")
        writes = [asyncio.ensure_future(self._produce_partition(rt, who, scope, t.name, p.index, p.records,
                                                                request.transactional_id, header))
                  for t in request.topic_data for p in t.partition_data]
        await asyncio.sleep(0)
        return Later(self._produce_answer(request, writes))

    async def _produce_answer(self, request: Any, writes: list[asyncio.Task[Any]]) -> Any:
        written = iter(await asyncio.gather(*writes))
        topic = ProduceResponse.TopicProduceResponse
        return ProduceResponse(throttle_time_ms=0, responses=[
            topic(name=t.name, topic_id=NO_TOPIC_ID, partition_responses=[next(written) for _ in t.partition_data])
            for t in request.topic_data])

    async def _produce_partition(self, rt: Any, who: Principal, scope: dict[str, Any], name: str, index: int, records: Any,
                                 tid: str | None, header: RequestHeader) -> Any:
        partition = ProduceResponse.TopicProduceResponse.PartitionProduceResponse
        try:
            batches = decode_batches(bytes(records or b""))
            messages = [outgoing(r, index) for b in batches for r in b.records]
            if not messages:
                raise InvalidRequest("a Produce partition without records")
            publisher = rt.access.publisher(who, scope, name)
            numbered = self._numbered(batches, name, index, len(messages))
            if numbered is not None and numbered[1] is not None:  # a batch stored (or held) before: its first answer
                base_offset = numbered[1].base_offset
            elif any(b.transactional or b.control for b in batches):  # held by the transaction: offsets at its commit
                self.txns.produce(tid or "", name, index, batches, header)
                base_offset = -1
                b = batches[0]
                self.sequences.stored(b.producer_id, b.producer_epoch, name, index, b.base_sequence, len(messages), base_offset)
            else:
                b = batches[0]
                if numbered is not None:  # its place now, as the write below (before send's first await): a pipelined
                    # next batch of the producer follows it, while this one waits for its flush
                    self.sequences.stored(b.producer_id, b.producer_epoch, name, index, b.base_sequence, len(messages), -1)
                try:
                    sent = await rt.usecases.sending.send(publisher, SendRequest(messages=messages))
                except BaseException:
                    if numbered is not None:  # not stored (or not durable): the client's retry is stored, not answered
                        self.sequences.withdrawn(b.producer_id, name, index, b.base_sequence)
                    raise
                base_offset = sent.results[0].queue_offset
                if numbered is not None:
                    self.sequences.answered(b.producer_id, name, index, b.base_sequence, base_offset)
            return partition(index=index, error_code=0, base_offset=base_offset, log_append_time_ms=-1,
                             log_start_offset=-1, record_errors=[], error_message=None)
        except (KafkaRefusal, BrokerError) as exc:
            return partition(index=index, error_code=error_of(exc), base_offset=-1, log_append_time_ms=-1, log_start_offset=-1,
                             record_errors=[], error_message=str(exc)[:500])

    def _numbered(self, batches: list[Any], name: str, index: int, count: int) -> tuple[SequenceVerdict, StoredBatch | None] | None:
        """None for a plain batch; for an idempotent producer's, the verdict on its numbers (refusals raised)."""
        ids = {b.producer_id for b in batches}
        if ids == {-1}:
            return None
        if len(batches) != 1:
            raise InvalidRecord("an idempotent producer sends one record batch per partition and request")
        b = batches[0]
        if not self.sequences.known(b.producer_id):
            # a producer this node holds no batches of (a set's new leader, a restarted broker): its batch is taken at
            # the number it carries, as Kafka's brokers take a producer they hold no state of (since 2.5). A client
            # without KIP-360 (aiokafka) would otherwise be refused every batch after a failover; a batch the old
            # leader stored whose answer was lost may be stored twice either way
            self.sequences.started(b.producer_id)
        verdict, earlier = self.sequences.decide(b.producer_id, b.producer_epoch, name, index, b.base_sequence, count)
        if verdict is SequenceVerdict.OUT_OF_ORDER:
            raise OutOfOrderSequence(f"batch numbered from {b.base_sequence} does not follow the last one stored")
        if verdict is SequenceVerdict.FENCED:
            raise ProducerEpochFenced(f"epoch {b.producer_epoch} is older than the producer's")
        return verdict, earlier

    async def init_producer_id(self, request: Any, header: RequestHeader) -> Any:
        """An idempotent producer's id: halfmq's own (durable, capped per principal); with a transactional id, its id and a
        new epoch from the transaction coordinator (txn_handlers.py); on a set's follower, an id the leader hands out to
        the connection's principal (set_view.SetView.asks_leader)."""
        try:
            if request.transactional_id:
                producer_id, epoch = await self.txns.init(request.transactional_id, request.transaction_timeout_ms, header)
            elif self.leader_ids is not None and self.view().asks_leader:
                producer_id, epoch = await self.leader_ids.new_producer_id(connection_token.get())
            else:
                uc, who, scope = self.using(header, "InitProducerId")
                result = await uc.producer_transactions.new_producer_id(who, scope)
                producer_id, epoch = result.producer_id, result.epoch
        except (KafkaRefusal, BrokerError) as exc:
            return InitProducerIdResponse(throttle_time_ms=0, error_code=error_of(exc), producer_id=-1, producer_epoch=-1)
        self.sequences.started(producer_id)
        return InitProducerIdResponse(throttle_time_ms=0, error_code=0, producer_id=producer_id, producer_epoch=epoch)

    # --- Fetch and ListOffsets ----------------------------------------------------------------------------------
    async def fetch(self, request: Any, header: RequestHeader) -> Any:
        """Answered once ``min_bytes`` are there or ``max_wait_ms`` passed; meanwhile it waits on the store's arrivals on
        its topics (the long polls' wake-up, ``ManageTopics.wait_for_records``), not on a timer, and reads again."""
        uc, who, scope = self.using(header, "Fetch")
        deadline = self.clock() + max(0, request.max_wait_ms) / 1000
        while True:
            budget = max(1, request.max_bytes if header.api_version >= 3 else 1 << 30)
            topics, got = [], 0
            for t in request.topics:
                parts = []
                for p in t.partitions:
                    answer, size = self._fetch_partition(uc, who, scope, t.topic, p, min(p.partition_max_bytes, budget))
                    budget -= size
                    got += size
                    parts.append(answer)
                topics.append(FetchResponse.FetchableTopicResponse(topic=t.topic, topic_id=NO_TOPIC_ID, partitions=parts))
            answer = FetchResponse(throttle_time_ms=0, error_code=0, session_id=0, responses=topics)
            if got >= max(1, request.min_bytes) or self.clock() >= deadline:
                return answer
            if not await uc.topics.wait_for_records([t.topic for t in request.topics], deadline - self.clock()):
                return answer

    def _fetch_partition(self, uc: Any, who: Principal, scope: dict[str, Any], name: str, p: Any, max_bytes: int) -> tuple[Any, int]:
        data = FetchResponse.FetchableTopicResponse.PartitionData
        try:
            records, (first, end) = uc.topics.read_records(who, scope, name, p.partition, p.fetch_offset, READ_CHUNK)
            if not first <= p.fetch_offset <= end:
                raise OffsetOutOfRange(f"offset {p.fetch_offset} is outside {first}..{end}")
            kept: list[StoredMessage] = []
            size, offset = 0, p.fetch_offset
            while records:
                for r in records:
                    offset = r.queue_offset + 1
                    if type(r) is DamagedEntry:
                        continue
                    kept.append(r)
                    size += len(r.body) + 64
                    if size >= max_bytes:
                        break
                if size >= max_bytes or offset >= end:
                    break
                records, _ = uc.topics.read_records(who, scope, name, p.partition, offset, READ_CHUNK)
            batch = encode_batch([kafka_record(m) for m in kept]) if kept else b""
            return data(partition_index=p.partition, error_code=0, high_watermark=end, last_stable_offset=end,
                        log_start_offset=first, aborted_transactions=[], preferred_read_replica=-1, records=batch), len(batch)
        except (KafkaRefusal, BrokerError) as exc:
            return data(partition_index=p.partition, error_code=error_of(exc), high_watermark=-1, last_stable_offset=-1,
                        log_start_offset=-1, aborted_transactions=None, preferred_read_replica=-1, records=None), 0

    async def list_offsets(self, request: Any, header: RequestHeader) -> Any:
        uc, who, scope = self.using(header, "ListOffsets")
        topic = ListOffsetsResponse.ListOffsetsTopicResponse
        partition = topic.ListOffsetsPartitionResponse
        answers = []
        for t in request.topics:
            parts = []
            for p in t.partitions:
                try:
                    at_ms = None if p.timestamp in (LATEST, EARLIEST) or p.timestamp < 0 else p.timestamp
                    first, end, at = uc.topics.queue_range(who, scope, t.name, p.partition_index, at_ms)
                    offset = first if p.timestamp == EARLIEST else end if at is None else at
                    parts.append(partition(partition_index=p.partition_index, error_code=0, timestamp=-1, offset=offset, leader_epoch=0))
                except BrokerError as exc:
                    parts.append(partition(partition_index=p.partition_index, error_code=error_of(exc), timestamp=-1, offset=-1,
                                           leader_epoch=-1))
            answers.append(topic(name=t.name, partitions=parts))
        return ListOffsetsResponse(throttle_time_ms=0, topics=answers)

    # --- committed offsets --------------------------------------------------------------------------------------
    async def offset_commit(self, request: Any, header: RequestHeader) -> Any:
        uc, who, scope = self.using(header, "OffsetCommit")
        topic = OffsetCommitResponse.OffsetCommitResponseTopic
        partition = topic.OffsetCommitResponsePartition
        answers = []
        for t in request.topics:
            moves = [(p.partition_index, p.committed_offset) for p in t.partitions]
            try:
                await uc.groups.commit_offsets(who, scope, request.group_id, t.name, moves)
                code = 0
            except BrokerError as exc:
                code = error_of(exc, group=True)
            answers.append(topic(name=t.name, topic_id=NO_TOPIC_ID,
                                 partitions=[partition(partition_index=qid, error_code=code) for qid, _ in moves]))
        return OffsetCommitResponse(throttle_time_ms=0, topics=answers)

    async def offset_fetch(self, request: Any, header: RequestHeader) -> Any:
        uc, who, scope = self.using(header, "OffsetFetch")
        if header.api_version >= 8:
            group = OffsetFetchResponse.OffsetFetchResponseGroup
            return OffsetFetchResponse(throttle_time_ms=0, groups=[
                group(group_id=g.group_id, error_code=0, topics=self._committed(uc, who, scope, g.group_id, g.topics, group.OffsetFetchResponseTopics))
                for g in request.groups])
        topics = self._committed(uc, who, scope, request.group_id, request.topics, OffsetFetchResponse.OffsetFetchResponseTopic)
        return OffsetFetchResponse(throttle_time_ms=0, error_code=0, topics=topics)

    def _committed(self, uc: Any, who: Principal, scope: dict[str, Any], group: str, asked: Any, topic: Any) -> list[Any]:
        partition = getattr(topic, "OffsetFetchResponsePartition", None) or topic.OffsetFetchResponsePartitions  # v1-7, v8+
        answers = []
        for t in asked or []:
            indexes = list(t.partition_indexes or [])
            try:
                committed = uc.groups.committed_offsets(who, scope, group, t.name)
                parts = [partition(partition_index=i, committed_offset=committed.get(i, -1), committed_leader_epoch=-1,
                                   metadata="", error_code=0) for i in indexes]
            except BrokerError as exc:
                code = error_of(exc, group=True)
                parts = [partition(partition_index=i, committed_offset=-1, committed_leader_epoch=-1, metadata="", error_code=code)
                         for i in indexes]
            answers.append(topic(name=t.name, partitions=parts))
        return answers

    def table(self, groups: GroupHandlers, sasl: SaslHandlers, admin: AdminHandlers) -> dict[int, Any]:
        """API key -> handler, for the dispatcher; the keys not here are answered as not served yet."""
        return {int(ApiKey.AddPartitionsToTxn): self.txns.add_partitions, int(ApiKey.EndTxn): self.txns.end,
                int(ApiKey.AddOffsetsToTxn): self.txns.add_offsets, int(ApiKey.TxnOffsetCommit): self.txns.commit_offsets,
                int(ApiKey.CreateTopics): admin.create_topics, int(ApiKey.DeleteTopics): admin.delete_topics, int(ApiKey.ListGroups): admin.list_groups,
                int(ApiKey.DescribeGroups): admin.describe_groups, int(ApiKey.DescribeConfigs): admin.describe_configs,
                int(ApiKey.AlterConfigs): admin.alter_configs, int(ApiKey.IncrementalAlterConfigs): admin.incremental_alter_configs,
                int(ApiKey.SaslHandshake): sasl.handshake, int(ApiKey.SaslAuthenticate): sasl.authenticate,
                int(ApiKey.JoinGroup): groups.join_group, int(ApiKey.SyncGroup): groups.sync_group,
                int(ApiKey.Heartbeat): groups.heartbeat, int(ApiKey.LeaveGroup): groups.leave_group,
                int(ApiKey.Metadata): self.metadata, int(ApiKey.FindCoordinator): self.find_coordinator,
                int(ApiKey.Produce): self.produce, int(ApiKey.InitProducerId): self.init_producer_id,
                int(ApiKey.Fetch): self.fetch, int(ApiKey.ListOffsets): self.list_offsets,
                int(ApiKey.OffsetCommit): self.offset_commit, int(ApiKey.OffsetFetch): self.offset_fetch}
