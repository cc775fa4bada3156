"""The admin calls Kafka's tools and admin clients make: CreateTopics, DeleteTopics, ListGroups, DescribeGroups,
DescribeConfigs, AlterConfigs, IncrementalAlterConfigs.

A topic is created as the HTTP front creates one (partitions are queues; the replication factor is the broker's or
the set's own, so any asked for is taken; its ``retention.ms``/``retention.bytes`` configs are its own retention, as
``POST /v1/topics`` takes it) and its configs altered as ``PATCH /v1/topics/{topic}`` alters them (topic_configs.py
reads the request; the use case authorizes, writes and audits); the groups listed are the Kafka front's groups (their members and state,
from the coordinator) and halfmq's consumer groups of every front (no members: their consumers pop, they do not join).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafka import errors as kafka_errors
from kafka.protocol.admin import (
    AlterConfigsResponse,
    CreateTopicsResponse,
    DeleteTopicsResponse,
    DescribeConfigsResponse,
    DescribeGroupsResponse,
    IncrementalAlterConfigsResponse,
    ListGroupsResponse,
)

from halfmq.broker.usecases.caller import Principal
from halfmq.errors import BrokerError, ConsumerGroupNotFound, TopicNotFound
from halfmq.wire import TopicAlter, TopicCreate, TopicInfo

from .calls import CoordinatedHandlers
from .error_codes import error_of, kafka_code
from .errors import InvalidConfig, KafkaRefusal
from .request_header import RequestHeader
from .topic_configs import RETENTION_BYTES, RETENTION_MS, Retention, altered_retention, named_retention

CONSUMER = "consumer"
TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4
"""Kafka's ConfigResource types DescribeConfigs answers (others: INVALID_REQUEST)."""
DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG = 1, 4
"""Kafka's ConfigSource of a value: the topic's own (its retention, set by POST/PATCH /v1/topics), or a halfmq setting."""
ALTERABLE = (RETENTION_MS, RETENTION_BYTES)
"""A topic's configs AlterConfigs changes; the rest are the broker's."""
STRING, INT, LONG, LIST = 2, 3, 5, 7
"""Kafka's ConfigType of a value (DescribeConfigs v3+)."""


def described_configs(settings: Any, resource_type: int, topic: TopicInfo | None = None) -> list[tuple[str, str, int]]:
    """(name, value, type) of what a topic or the broker is configured with, under Kafka's topic names (retention by
    time and size, deletion only, the largest message) or its broker names: a topic's own retention where it has one
    (``topic``), else the broker's settings."""
    own_ms, own_bytes = (topic.retention_ms, topic.retention_bytes) if topic is not None else (None, None)
    retention_ms = str(own_ms if own_ms is not None else int(settings.retention * 1000))
    retention_bytes = str(own_bytes if own_bytes is not None else
                          settings.retention_bytes if settings.retention_bytes is not None else -1)
    names = (("retention.ms", "retention.bytes", "cleanup.policy", "max.message.bytes") if resource_type == TOPIC_RESOURCE
             else ("log.retention.ms", "log.retention.bytes", "log.cleanup.policy", "message.max.bytes"))
    values = ((retention_ms, LONG), (retention_bytes, LONG), ("delete", LIST), (str(settings.max_message_size), INT))
    return [(name, value, kind) for name, (value, kind) in zip(names, values, strict=True)]


def broker_topic_configs(settings: Any) -> dict[str, str]:
    """What a topic without limits of its own is configured with (the values topic_configs.py compares to)."""
    return {name: value for name, value, _ in described_configs(settings, TOPIC_RESOURCE)}


def _source(name: str, topic: TopicInfo | None) -> int:
    """DYNAMIC_TOPIC_CONFIG for a retention the topic has of its own, else STATIC_BROKER_CONFIG."""
    own = {"retention.ms": topic.retention_ms, "retention.bytes": topic.retention_bytes}.get(name) if topic else None
    return DYNAMIC_TOPIC_CONFIG if own is not None else STATIC_BROKER_CONFIG


class AdminHandlers(CoordinatedHandlers):
    async def create_topics(self, request: Any, header: RequestHeader) -> Any:
        """Each topic with its configs' retention (``named_retention``: a config halfmq does not honour, or a bad value,
        is refused INVALID_CONFIG and that topic is not created)."""
        rt, who, scope = self.calling(header, "CreateTopics")
        uc, broker = rt.usecases, broker_topic_configs(rt.settings)
        result = CreateTopicsResponse.CreatableTopicResult
        answers = []
        for t in request.topics:
            queues = t.num_partitions if t.num_partitions > 0 else None
            try:
                retention_ms, retention_bytes = named_retention(((c.name, c.value) for c in t.configs or []), broker)
                if request.validate_only:
                    exists = self._exists(uc, who, scope, t.name)
                    code = int(kafka_errors.TopicAlreadyExistsError.errno) if exists else 0
                    answers.append(result(name=t.name, error_code=code, error_message=None, num_partitions=t.num_partitions,
                                          replication_factor=t.replication_factor, configs=[]))
                    continue
                info, created = await uc.topics.create(who, scope, TopicCreate(name=t.name, queues=queues, retention_ms=retention_ms,
                                                                               retention_bytes=retention_bytes))
                code = 0 if created else int(kafka_errors.TopicAlreadyExistsError.errno)
                answers.append(result(name=t.name, error_code=code, error_message=None if created else f"topic {t.name!r} exists",
                                      num_partitions=len(info.queues), replication_factor=t.replication_factor, configs=[]))
            except (KafkaRefusal, BrokerError) as exc:
                answers.append(result(name=t.name, error_code=error_of(exc), error_message=str(exc)[:500], num_partitions=-1,
                                      replication_factor=-1, configs=[]))
        return CreateTopicsResponse(throttle_time_ms=0, topics=answers)

    async def delete_topics(self, request: Any, header: RequestHeader) -> Any:
        """As the HTTP front's DELETE: refused (POLICY_VIOLATION) while a topic has pending halves or deliveries in
        flight; Kafka's clients cannot force it (an operator can, over HTTP or ``halfmq admin``)."""
        uc, who, scope = self.using(header, "DeleteTopics")
        result = DeleteTopicsResponse.DeletableTopicResult
        answers = []
        for name in request.topic_names or []:
            try:
                await uc.topics.delete(who, scope, name, False)
                answers.append(result(name=name, error_code=0, error_message=None))
            except BrokerError as exc:
                answers.append(result(name=name, error_code=kafka_code(exc), error_message=str(exc)[:500]))
        return DeleteTopicsResponse(throttle_time_ms=0, responses=answers)

    @staticmethod
    def _exists(uc: Any, who: Principal, scope: dict[str, Any], name: str) -> bool:
        try:
            uc.topics.describe(who, scope, name)
        except TopicNotFound:
            return False
        return True

    async def describe_configs(self, request: Any, header: RequestHeader) -> Any:
        """A topic's (``describe`` on it; unknown: UNKNOWN_TOPIC_OR_PARTITION) or the broker's (``admin`` on the
        cluster) configuration: the topic's own retention, else the broker's settings (``described_configs``), read-only
        but for a topic's retention (AlterConfigs); the keys asked for, or every one."""
        rt, who, scope = self.calling(header, "DescribeConfigs")
        result = DescribeConfigsResponse.DescribeConfigsResult
        config = result.DescribeConfigsResourceResult
        answers = []
        for r in request.resources:
            topic = None
            try:
                if r.resource_type == TOPIC_RESOURCE:
                    topic = rt.usecases.topics.describe(who, scope, r.resource_name)
                elif r.resource_type == BROKER_RESOURCE:
                    rt.access.cluster_admin(who, scope)
                else:
                    answers.append(result(error_code=int(kafka_errors.InvalidRequestError.errno), resource_type=r.resource_type,
                                          resource_name=r.resource_name, configs=[],
                                          error_message=f"resource type {r.resource_type}: only topics (2) and the broker (4)"))
                    continue
            except BrokerError as exc:
                answers.append(result(error_code=kafka_code(exc), error_message=str(exc)[:500], resource_type=r.resource_type,
                                      resource_name=r.resource_name, configs=[]))
                continue
            asked = set(r.configuration_keys) if r.configuration_keys is not None else None
            alterable = ALTERABLE if r.resource_type == TOPIC_RESOURCE else ()
            answers.append(result(error_code=0, error_message=None, resource_type=r.resource_type, resource_name=r.resource_name,
                                  configs=[config(name=name, value=value, read_only=name not in alterable, config_source=_source(name, topic),
                                                  is_default=False, is_sensitive=False, synonyms=[], config_type=kind,
                                                  documentation=None)
                                           for name, value, kind in described_configs(rt.settings, r.resource_type, topic)
                                           if asked is None or name in asked]))
        return DescribeConfigsResponse(throttle_time_ms=0, results=answers)

    async def alter_configs(self, request: Any, header: RequestHeader) -> Any:
        """AlterConfigs: a topic's whole set of configs replaced (a retention not named goes back to the broker's)."""
        answers = [await self._alter(r, request.validate_only, header, "AlterConfigs",
                                     lambda r, current, broker: named_retention(((c.name, c.value) for c in r.configs), broker))
                   for r in request.resources]
        return AlterConfigsResponse(throttle_time_ms=0, responses=answers)

    async def incremental_alter_configs(self, request: Any, header: RequestHeader) -> Any:
        """IncrementalAlterConfigs: the named configs of a topic set or deleted, the others kept."""
        answers = [await self._alter(r, request.validate_only, header, "IncrementalAlterConfigs",
                                     lambda r, current, broker: altered_retention(
                                         ((c.name, c.config_operation, c.value) for c in r.configs), current, broker))
                   for r in request.resources]
        return IncrementalAlterConfigsResponse(throttle_time_ms=0, responses=answers)

    async def _alter(self, resource: Any, validate_only: bool, header: RequestHeader, api: str,
                     asked: Callable[[Any, Retention, dict[str, str]], Retention]) -> Any:
        """One resource's answer: a topic's retention changed through the use case behind ``PATCH /v1/topics/{topic}``
        (``admin`` on the topic, audited, durable when answered), or only checked (``validate_only``); the broker's
        configs are its settings, read at start (INVALID_CONFIG, for an administrator of the cluster); any other
        resource type INVALID_REQUEST. A refusal changes nothing."""
        rt, who, scope = self.calling(header, api)
        answer = AlterConfigsResponse.AlterConfigsResourceResponse
        try:
            if resource.resource_type == TOPIC_RESOURCE:
                topic = rt.usecases.topics.describe(who, scope, resource.resource_name)
                retention_ms, retention_bytes = asked(resource, (topic.retention_ms, topic.retention_bytes),
                                                      broker_topic_configs(rt.settings))
                if validate_only:
                    rt.usecases.topics.may_alter(who, scope, resource.resource_name)
                else:
                    await rt.usecases.topics.alter(who, scope, resource.resource_name,
                                                   TopicAlter(retention_ms=retention_ms, retention_bytes=retention_bytes))
            elif resource.resource_type == BROKER_RESOURCE:
                rt.access.cluster_admin(who, scope)
                raise InvalidConfig("the broker's configs are its settings (HALFMQ_BROKER_*), read at start: set them there")
            else:
                return answer(error_code=int(kafka_errors.InvalidRequestError.errno), resource_type=resource.resource_type,
                              resource_name=resource.resource_name,
                              error_message=f"resource type {resource.resource_type}: only topics (2) are altered")
        except (KafkaRefusal, BrokerError) as exc:
            return answer(error_code=error_of(exc), error_message=str(exc)[:500], resource_type=resource.resource_type,
                          resource_name=resource.resource_name)
        return answer(error_code=0, error_message=None, resource_type=resource.resource_type, resource_name=resource.resource_name)

    async def list_groups(self, request: Any, header: RequestHeader) -> Any:
        uc, who, scope = self.using(header, "ListGroups")
        listed = ListGroupsResponse.ListedGroup
        try:
            halfmq_groups = [g.group for g in uc.groups.list_groups(who, scope, False).groups]
        except BrokerError as exc:
            return ListGroupsResponse(throttle_time_ms=0, error_code=kafka_code(exc, group=True), groups=[])
        kafka_groups = self.coordinator.groups
        names = list(kafka_groups) + [g for g in halfmq_groups if g not in kafka_groups]
        states = set(request.states_filter or []) if header.api_version >= 4 else set()
        groups = []
        for name in names:
            group = kafka_groups.get(name)
            state = group.state.value if group is not None else "Empty"
            if states and state not in states:
                continue
            groups.append(listed(group_id=name, protocol_type=group.protocol_type if group is not None else "", group_state=state,
                                 group_type="classic"))
        return ListGroupsResponse(throttle_time_ms=0, error_code=0, groups=groups)

    async def describe_groups(self, request: Any, header: RequestHeader) -> Any:
        uc, who, scope = self.using(header, "DescribeGroups")
        described = DescribeGroupsResponse.DescribedGroup
        member = described.DescribedGroupMember
        answers = []
        for name in request.groups:
            group = self.coordinator.groups.get(name)
            try:
                if group is None:
                    uc.groups.describe(who, scope, name)  # the right to describe it, and whether halfmq's groups know it
                else:
                    uc.groups.may_describe(who, scope, name)
            except ConsumerGroupNotFound:  # no Kafka member and no halfmq progress: Kafka's "Dead"
                answers.append(described(error_code=0, error_message=None, group_id=name, group_state="Dead", protocol_type="",
                                         protocol_data="", members=[]))
                continue
            except BrokerError as exc:
                answers.append(described(error_code=kafka_code(exc, group=True), error_message=str(exc)[:500], group_id=name,
                                         group_state="", protocol_type="", protocol_data="", members=[]))
                continue
            if group is None:
                answers.append(described(error_code=0, error_message=None, group_id=name, group_state="Empty", protocol_type="",
                                         protocol_data="", members=[]))
                continue
            answers.append(described(
                error_code=0, error_message=None, group_id=name, group_state=group.state.value, protocol_type=group.protocol_type,
                protocol_data=group.protocol_name, members=[
                    member(member_id=m.member_id, group_instance_id=None, client_id=m.client_id, client_host="",
                           member_metadata=dict(m.protocols).get(group.protocol_name, b""), member_assignment=m.assignment)
                    for m in group.members.values()]))
        return DescribeGroupsResponse(throttle_time_ms=0, groups=answers)
