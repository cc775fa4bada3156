"""Every Kafka API the front serves, as one table: key, schemas, the versions served, how a refusal is answered.

The ApiVersions answer is generated from this table (``api_versions_response``), and the dispatcher refuses any
version outside it, so what the front advertises and what it accepts cannot drift apart. The ranges (issue 47):

- the floor is Kafka 4's (KIP-896): record batches v2 only, so Produce >= 3 and Fetch >= 4 are served. Produce is
  still *advertised* from 0, as Kafka 4.0 does (KAFKA-18659: librdkafka turns compression off when the broker does
  not list Produce v0-2), and a Produce below 3 is answered UNSUPPORTED_VERSION;
- the ceiling is the newest version that needs nothing halfmq lacks: no topic ids (Produce and Fetch <= 12,
  OffsetCommit and OffsetFetch <= 9, DeleteTopics <= 5), no share groups (FindCoordinator <= 5), no two-phase commit
  (InitProducerId <= 5), no KIP-848 group types (ListGroups <= 4), transactions V1 only (EndTxn <= 4,
  TxnOffsetCommit <= 4: V2 is switched on by a ``transaction.version`` feature the front never advertises),
  AddPartitionsToTxn <= 3 (v4+ is the brokers' batched verification), no tiered storage (ListOffsets <= 9).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kafka.protocol.admin import (
    AlterConfigsRequest,
    AlterConfigsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
    ListGroupsRequest,
    ListGroupsResponse,
)
from kafka.protocol.api_key import ApiKey
from kafka.protocol.consumer import (
    FetchRequest,
    FetchResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kafka.protocol.metadata import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
)
from kafka.protocol.producer import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    EndTxnResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    ProduceRequest,
    ProduceResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse

from . import error_answers
from .error_answers import ErrorAnswer, top_level


@dataclass(frozen=True, slots=True)
class Api:
    key: ApiKey
    request: Any
    """kafka-python's request class (generated from Kafka's <Name>Request.json)."""
    response: Any
    min_version: int
    max_version: int
    """The versions served; any other is answered UNSUPPORTED_VERSION."""
    error_answer: ErrorAnswer
    advertised_min: int | None = None
    """The floor ApiVersions names when it differs from ``min_version`` (Produce: 0, as Kafka 4.0 answers)."""

    def serves(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version

    def knows(self, version: int) -> bool:
        """Whether the library's schema describes this version, so a refusal can be written in its shape."""
        return 0 <= version <= int(self.response.max_version) and 0 <= version <= int(self.request.max_version)


def api(key: ApiKey, request: Any, response: Any, versions: tuple[int, int], error_answer: ErrorAnswer | None = None,
        advertised_min: int | None = None) -> Api:
    return Api(key, request, response, versions[0], versions[1], error_answer or top_level(response), advertised_min)


API_TABLE: tuple[Api, ...] = (
    api(ApiKey.Produce, ProduceRequest, ProduceResponse, (3, 12), error_answers.produce, advertised_min=0),
    api(ApiKey.Fetch, FetchRequest, FetchResponse, (4, 12), error_answers.fetch),
    api(ApiKey.ListOffsets, ListOffsetsRequest, ListOffsetsResponse, (1, 9), error_answers.list_offsets),
    api(ApiKey.Metadata, MetadataRequest, MetadataResponse, (0, 12), error_answers.metadata),
    api(ApiKey.OffsetCommit, OffsetCommitRequest, OffsetCommitResponse, (2, 9), error_answers.offset_commit),
    api(ApiKey.OffsetFetch, OffsetFetchRequest, OffsetFetchResponse, (1, 9), error_answers.offset_fetch),
    api(ApiKey.FindCoordinator, FindCoordinatorRequest, FindCoordinatorResponse, (0, 5), error_answers.find_coordinator),
    api(ApiKey.JoinGroup, JoinGroupRequest, JoinGroupResponse, (0, 9)),
    api(ApiKey.Heartbeat, HeartbeatRequest, HeartbeatResponse, (0, 4)),
    api(ApiKey.LeaveGroup, LeaveGroupRequest, LeaveGroupResponse, (0, 5)),
    api(ApiKey.SyncGroup, SyncGroupRequest, SyncGroupResponse, (0, 5)),
    api(ApiKey.DescribeGroups, DescribeGroupsRequest, DescribeGroupsResponse, (0, 5), error_answers.describe_groups),
    api(ApiKey.ListGroups, ListGroupsRequest, ListGroupsResponse, (0, 4)),
    api(ApiKey.SaslHandshake, SaslHandshakeRequest, SaslHandshakeResponse, (0, 1)),
    api(ApiKey.ApiVersions, ApiVersionsRequest, ApiVersionsResponse, (0, 4)),
    api(ApiKey.CreateTopics, CreateTopicsRequest, CreateTopicsResponse, (2, 7), error_answers.create_topics),
    api(ApiKey.DeleteTopics, DeleteTopicsRequest, DeleteTopicsResponse, (1, 5), error_answers.delete_topics),
    api(ApiKey.InitProducerId, InitProducerIdRequest, InitProducerIdResponse, (0, 5)),
    api(ApiKey.AddPartitionsToTxn, AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, (0, 3), error_answers.add_partitions_to_txn),
    api(ApiKey.AddOffsetsToTxn, AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, (0, 4)),
    api(ApiKey.EndTxn, EndTxnRequest, EndTxnResponse, (0, 4)),
    api(ApiKey.TxnOffsetCommit, TxnOffsetCommitRequest, TxnOffsetCommitResponse, (0, 4), error_answers.txn_offset_commit),
    api(ApiKey.DescribeConfigs, DescribeConfigsRequest, DescribeConfigsResponse, (1, 4), error_answers.describe_configs),
    api(ApiKey.AlterConfigs, AlterConfigsRequest, AlterConfigsResponse, (0, 2), error_answers.alter_configs),
    api(ApiKey.SaslAuthenticate, SaslAuthenticateRequest, SaslAuthenticateResponse, (0, 2)),
    api(ApiKey.IncrementalAlterConfigs, IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse, (0, 1),
        error_answers.incremental_alter_configs),
)


def by_key(table: Iterable[Api]) -> Mapping[int, Api]:
    return {int(entry.key): entry for entry in table}


def api_versions_response(table: Iterable[Api], error_code: int = 0) -> Any:
    """The ApiVersions answer: every API of the table with the range it advertises, no features (so no client turns
    on transactions V2 or KIP-848 groups), no throttling."""
    version = ApiVersionsResponse.ApiVersion
    return ApiVersionsResponse(error_code=error_code, throttle_time_ms=0, api_keys=[
        version(api_key=int(entry.key), min_version=entry.min_version if entry.advertised_min is None else entry.advertised_min,
                max_version=entry.max_version)
        for entry in sorted(table, key=lambda entry: int(entry.key))],
        supported_features=[], finalized_features_epoch=-1, finalized_features=[], zk_migration_ready=False)
