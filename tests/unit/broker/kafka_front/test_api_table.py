"""The API table: what the front serves and advertises (issue 47's ranges), and the ApiVersions answer built from it."""

from __future__ import annotations

import pytest
from kafka.protocol.api_key import ApiKey
from kafka.protocol.metadata import ApiVersionsResponse

from halfmq.broker.kafka_front.api_table import API_TABLE, api_versions_response, by_key

ISSUE_47_APIS = {
    ApiKey.ApiVersions, ApiKey.Metadata, ApiKey.Produce, ApiKey.Fetch, ApiKey.ListOffsets, ApiKey.FindCoordinator,
    ApiKey.JoinGroup, ApiKey.SyncGroup, ApiKey.Heartbeat, ApiKey.LeaveGroup, ApiKey.OffsetCommit, ApiKey.OffsetFetch,
    ApiKey.InitProducerId, ApiKey.AddPartitionsToTxn, ApiKey.AddOffsetsToTxn, ApiKey.EndTxn, ApiKey.TxnOffsetCommit,
    ApiKey.CreateTopics, ApiKey.DeleteTopics, ApiKey.DescribeGroups, ApiKey.ListGroups, ApiKey.DescribeConfigs,
    ApiKey.AlterConfigs, ApiKey.IncrementalAlterConfigs, ApiKey.SaslHandshake, ApiKey.SaslAuthenticate,
}
APIS = by_key(API_TABLE)


def advertised() -> dict[int, tuple[int, int]]:
    return {v.api_key: (v.min_version, v.max_version) for v in api_versions_response(API_TABLE).api_keys}


def test_the_table_holds_every_api_issue_47_names_once() -> None:
    assert {entry.key for entry in API_TABLE} == ISSUE_47_APIS
    assert len(API_TABLE) == len(ISSUE_47_APIS)


def test_the_api_versions_answer_is_the_table() -> None:
    assert advertised() == {int(e.key): (e.min_version if e.advertised_min is None else e.advertised_min, e.max_version) for e in API_TABLE}
    assert list(advertised()) == sorted(advertised())


def test_produce_is_advertised_from_v0_as_kafka_4_does_but_served_from_v3() -> None:
    produce = APIS[ApiKey.Produce]
    assert advertised()[ApiKey.Produce] == (0, 12)
    assert not produce.serves(2) and produce.serves(3)


def test_the_floor_is_record_batches_v2() -> None:
    assert (APIS[ApiKey.Produce].min_version, APIS[ApiKey.Fetch].min_version) == (3, 4)


@pytest.mark.parametrize(("key", "ceiling"), [(ApiKey.Produce, 12), (ApiKey.Fetch, 12), (ApiKey.OffsetCommit, 9),
                                              (ApiKey.OffsetFetch, 9), (ApiKey.DeleteTopics, 5)])
def test_no_version_naming_topics_by_id_is_served(key: ApiKey, ceiling: int) -> None:
    """Fetch and Produce v13, OffsetCommit and OffsetFetch v10, DeleteTopics v6 name topics by id; halfmq has none."""
    assert APIS[key].max_version == ceiling


def test_no_version_that_switches_on_transactions_v2_or_two_phase_commit_is_served() -> None:
    assert APIS[ApiKey.EndTxn].max_version == 4 and APIS[ApiKey.TxnOffsetCommit].max_version == 4
    assert APIS[ApiKey.InitProducerId].max_version == 5 and APIS[ApiKey.AddPartitionsToTxn].max_version == 3
    answer = api_versions_response(API_TABLE)
    assert answer.supported_features == [] and answer.finalized_features == []  # no transaction.version feature


def test_every_served_version_is_one_kafka_pythons_schemas_describe() -> None:
    for entry in API_TABLE:
        assert entry.knows(entry.min_version) and entry.knows(entry.max_version), entry.key.name


@pytest.mark.parametrize("version", range(5))
def test_the_api_versions_answer_encodes_at_every_version_served(version: int) -> None:
    encoded = api_versions_response(API_TABLE).encode(version=version)
    decoded = ApiVersionsResponse.decode(encoded, version=version)
    assert decoded.error_code == 0
    assert {v.api_key: (v.min_version, v.max_version) for v in decoded.api_keys} == advertised()
