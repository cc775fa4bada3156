"""A refused request's answer, in its API's own response shape (Kafka's ``AbstractRequest.getErrorResponse``).

An API whose response has a top-level error code carries the error there; one whose errors are per topic, partition,
group or resource answers every item the request named with the error, so a client reads one failure per thing it
asked about instead of a response it cannot match to its request. Later handlers answer their own refusals the same
way; TxnOffsetCommit's handler answers through ``txn_offset_commit`` even when it succeeds, since its step is kept or
refused whole (one code on every partition). Responses are kafka-python's classes; the version is applied when the
answer is encoded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafka.protocol.admin import (
    AlterConfigsResponse,
    CreateTopicsResponse,
    DeleteTopicsResponse,
    DescribeConfigsResponse,
    DescribeGroupsResponse,
    IncrementalAlterConfigsResponse,
)
from kafka.protocol.consumer import FetchResponse, ListOffsetsResponse, OffsetCommitResponse, OffsetFetchResponse
from kafka.protocol.metadata import FindCoordinatorResponse, MetadataResponse
from kafka.protocol.producer import AddPartitionsToTxnResponse, ProduceResponse, TxnOffsetCommitResponse

ErrorAnswer = Callable[[Any, int, int], Any]
"""(the decoded request, or None when its body did not decode; the error code; the version) -> the response."""


def items(request: Any, field: str) -> list[Any]:
    """The request's ``field`` list, empty when the body did not decode or the field is null at this version."""
    return list(getattr(request, field, None) or []) if request is not None else []


def top_level(response: type) -> ErrorAnswer:
    """For APIs with a top-level ErrorCode at every version the table serves (JoinGroup, EndTxn, SaslHandshake…)."""

    def answer(request: Any, code: int, version: int) -> Any:
        return response(error_code=code)

    return answer


def metadata(request: Any, code: int, version: int) -> Any:
    """No broker, and each asked-for topic with the error (Metadata's top-level ErrorCode is v13+, past the table)."""
    topic = MetadataResponse.MetadataResponseTopic
    return MetadataResponse(brokers=[], controller_id=-1, error_code=code, topics=[
        topic(error_code=code, name=t.name, topic_id=t.topic_id, partitions=[]) for t in items(request, "topics")])


def produce(request: Any, code: int, version: int) -> Any:
    topic = ProduceResponse.TopicProduceResponse
    partition = topic.PartitionProduceResponse
    return ProduceResponse(responses=[
        topic(name=t.name, topic_id=t.topic_id, partition_responses=[
            partition(index=p.index, error_code=code, base_offset=-1, log_append_time_ms=-1, log_start_offset=-1)
            for p in items(t, "partition_data")])
        for t in items(request, "topic_data")])


def fetch(request: Any, code: int, version: int) -> Any:
    topic = FetchResponse.FetchableTopicResponse
    partition = topic.PartitionData
    return FetchResponse(error_code=code, session_id=0, responses=[
        topic(topic=t.topic, topic_id=t.topic_id, partitions=[
            partition(partition_index=p.partition, error_code=code, high_watermark=-1, last_stable_offset=-1,
                      log_start_offset=-1, aborted_transactions=None, records=None)
            for p in items(t, "partitions")])
        for t in items(request, "topics")])


def list_offsets(request: Any, code: int, version: int) -> Any:
    topic = ListOffsetsResponse.ListOffsetsTopicResponse
    partition = topic.ListOffsetsPartitionResponse
    return ListOffsetsResponse(topics=[
        topic(name=t.name, partitions=[partition(partition_index=p.partition_index, error_code=code, timestamp=-1, offset=-1)
                                       for p in items(t, "partitions")])
        for t in items(request, "topics")])


def find_coordinator(request: Any, code: int, version: int) -> Any:
    """v0-3 carry one key and a top-level error; v4+ a list of keys, each answered."""
    coordinator = FindCoordinatorResponse.Coordinator
    return FindCoordinatorResponse(error_code=code, node_id=-1, host="", port=-1, coordinators=[
        coordinator(key=key, node_id=-1, host="", port=-1, error_code=code) for key in items(request, "coordinator_keys")])


def offset_commit(request: Any, code: int, version: int) -> Any:
    topic = OffsetCommitResponse.OffsetCommitResponseTopic
    partition = topic.OffsetCommitResponsePartition
    return OffsetCommitResponse(topics=[
        topic(name=t.name, topic_id=t.topic_id, partitions=[partition(partition_index=p.partition_index, error_code=code)
                                                            for p in items(t, "partitions")])
        for t in items(request, "topics")])


def offset_fetch(request: Any, code: int, version: int) -> Any:
    """v1 per partition, v2-7 a top-level error too, v8+ per group."""
    topic = OffsetFetchResponse.OffsetFetchResponseTopic
    partition = topic.OffsetFetchResponsePartition
    group = OffsetFetchResponse.OffsetFetchResponseGroup
    return OffsetFetchResponse(error_code=code, topics=[
        topic(name=t.name, partitions=[partition(partition_index=index, committed_offset=-1, error_code=code)
                                       for index in items(t, "partition_indexes")])
        for t in items(request, "topics")],
        groups=[group(group_id=g.group_id, topics=[], error_code=code) for g in items(request, "groups")])


def add_partitions_to_txn(request: Any, code: int, version: int) -> Any:
    """v0-3 (the clients' versions): every partition named; v4+ (brokers' batched form): a top-level error."""
    result = AddPartitionsToTxnResponse.AddPartitionsToTxnTopicResult
    partition = result.AddPartitionsToTxnPartitionResult
    return AddPartitionsToTxnResponse(error_code=code, results_by_transaction=[], results_by_topic_v3_and_below=[
        result(name=t.name, results_by_partition=[partition(partition_index=index, partition_error_code=code)
                                                  for index in items(t, "partitions")])
        for t in items(request, "v3_and_below_topics")])


def txn_offset_commit(request: Any, code: int, version: int) -> Any:
    topic = TxnOffsetCommitResponse.TxnOffsetCommitResponseTopic
    partition = topic.TxnOffsetCommitResponsePartition
    return TxnOffsetCommitResponse(topics=[
        topic(name=t.name, partitions=[partition(partition_index=p.partition_index, error_code=code)
                                       for p in items(t, "partitions")])
        for t in items(request, "topics")])


def create_topics(request: Any, code: int, version: int) -> Any:
    result = CreateTopicsResponse.CreatableTopicResult
    return CreateTopicsResponse(topics=[result(name=t.name, error_code=code, num_partitions=-1, replication_factor=-1)
                                        for t in items(request, "topics")])


def delete_topics(request: Any, code: int, version: int) -> Any:
    """Names up to v5; v6 names topics by state (name or id)."""
    result = DeleteTopicsResponse.DeletableTopicResult
    named = [result(name=name, error_code=code) for name in items(request, "topic_names")]
    by_state = [result(name=t.name, topic_id=t.topic_id, error_code=code) for t in items(request, "topics")]
    return DeleteTopicsResponse(responses=named + by_state)


def describe_groups(request: Any, code: int, version: int) -> Any:
    group = DescribeGroupsResponse.DescribedGroup
    return DescribeGroupsResponse(groups=[group(error_code=code, group_id=g, group_state="", protocol_type="", protocol_data="",
                                                members=[]) for g in items(request, "groups")])


def describe_configs(request: Any, code: int, version: int) -> Any:
    result = DescribeConfigsResponse.DescribeConfigsResult
    return DescribeConfigsResponse(results=[result(error_code=code, resource_type=r.resource_type, resource_name=r.resource_name,
                                                   configs=[]) for r in items(request, "resources")])


def altered_configs(response: type) -> ErrorAnswer:
    """AlterConfigs and IncrementalAlterConfigs: every resource named, with the error."""

    def answer(request: Any, code: int, version: int) -> Any:
        result = response.AlterConfigsResourceResponse  # type: ignore[attr-defined]
        return response(responses=[result(error_code=code, error_message=None, resource_type=r.resource_type,
                                          resource_name=r.resource_name) for r in items(request, "resources")])

    return answer


alter_configs = altered_configs(AlterConfigsResponse)
incremental_alter_configs = altered_configs(IncrementalAlterConfigsResponse)
