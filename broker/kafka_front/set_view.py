"""Who answers what on a broker set's Kafka port: the decision (pure) the front's handlers only map to answers.

Every member of a set listens on its Kafka port, so a running kafka-python or aiokafka client, which asks only the
brokers Metadata named, always finds one that answers after the leader's kill. Each member is a Kafka broker with a
stable node id (its place among the sorted ``cluster_members``, from 1: the same on every node and in every answer,
as kafka-python connects to the ids Metadata names); the leader leads every partition and coordinates every group
and transactional id. A follower answers Metadata and FindCoordinator naming the leader, and refuses what only the
leader serves with the code that sends a client there: NOT_LEADER_OR_FOLLOWER for Produce, Fetch and ListOffsets,
NOT_COORDINATOR for the group, transaction and producer-id calls, NOT_CONTROLLER for the admin calls. While no
leader is known: LEADER_NOT_AVAILABLE and COORDINATOR_NOT_AVAILABLE, which every client retries.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from kafka import errors as kafka_errors
from kafka.protocol.api_key import ApiKey

NO_NODE = -1


@dataclass(frozen=True, slots=True)
class Broker:
    """A member as Kafka's clients see it: its node id and the Kafka address it advertises."""

    node_id: int
    host: str
    port: int


class Served(Enum):
    """Where an API is served: on every member, by the partitions' leader, by the coordinator, or by the controller."""

    ANY = "any"
    PARTITION_LEADER = "partition_leader"
    COORDINATOR = "coordinator"
    CONTROLLER = "controller"


SERVED_BY: dict[int, Served] = {
    **{int(k): Served.PARTITION_LEADER for k in (ApiKey.Produce, ApiKey.Fetch, ApiKey.ListOffsets)},
    **{int(k): Served.COORDINATOR for k in (
        ApiKey.JoinGroup, ApiKey.SyncGroup, ApiKey.Heartbeat, ApiKey.LeaveGroup, ApiKey.OffsetCommit, ApiKey.OffsetFetch,
        ApiKey.InitProducerId, ApiKey.AddPartitionsToTxn, ApiKey.AddOffsetsToTxn, ApiKey.EndTxn, ApiKey.TxnOffsetCommit,
        ApiKey.DescribeGroups, ApiKey.ListGroups)},
    **{int(k): Served.CONTROLLER for k in (
        ApiKey.CreateTopics, ApiKey.DeleteTopics, ApiKey.DescribeConfigs, ApiKey.AlterConfigs, ApiKey.IncrementalAlterConfigs)},
}
"""API key -> who serves it; a key not listed (ApiVersions, Metadata, FindCoordinator, SASL's) is served everywhere."""


@dataclass(frozen=True, slots=True)
class SetView:
    """One node's picture at one moment: its own id, the live members it knows the Kafka address of, the leader's id
    (None: not known) and whether this node leads with its services up (``leading``: a promotion's services are built
    before it says so, a step-down says it no longer does before they close)."""

    own: int
    brokers: tuple[Broker, ...]
    leader: int | None
    leading: bool
    epoch: int = 0
    replicas: tuple[int, ...] = ()  # every member's id (empty: the brokers')
    in_sync: tuple[int, ...] = ()  # the in-sync members' ids (empty: the brokers')

    @classmethod
    def single(cls, broker: Broker) -> SetView:
        """A single broker: the one node, leading."""
        return cls(own=broker.node_id, brokers=(broker,), leader=broker.node_id, leading=True)

    @property
    def node_ids(self) -> list[int]:
        return [b.node_id for b in self.brokers]

    @property
    def replica_ids(self) -> list[int]:
        """Each partition's replicas as Metadata names them: every member."""
        return list(self.replicas) or self.node_ids

    @property
    def isr_ids(self) -> list[int]:
        """Each partition's in-sync replicas."""
        return list(self.in_sync) or self.node_ids

    @property
    def offline_ids(self) -> list[int]:
        """The replicas Metadata names no broker for (a member not in sync, or whose address is not known yet)."""
        return [r for r in self.replica_ids if r not in self.node_ids]

    @property
    def partition_leader(self) -> int:
        """The partitions' leader as Metadata names it (-1 while none is known or its address is not)."""
        return self.leader if self.coordinator is not None and self.leader is not None else NO_NODE

    @property
    def coordinator(self) -> Broker | None:
        """The leader's broker, when known with its Kafka address."""
        return next((b for b in self.brokers if b.node_id == self.leader), None)

    @property
    def partition_error(self) -> int:
        """Metadata's per-partition error code: 0, or LEADER_NOT_AVAILABLE while no leader is known."""
        return 0 if self.partition_leader != NO_NODE else int(kafka_errors.LeaderNotAvailableError.errno)

    @property
    def asks_leader(self) -> bool:
        """Whether this node answers an idempotent producer's InitProducerId with an id it asks the leader for (a
        follower that knows another member leads, at its Kafka address): any Kafka broker answers it, and
        kafka-python keeps asking the node it chose (leader_producer_ids.py)."""
        return not self.leading and self.coordinator is not None and self.leader != self.own

    def refusal(self, api_key: int, transactional: bool = True) -> int | None:
        """The error code this node answers ``api_key`` with, or None when it serves it. An idempotent producer's
        InitProducerId (``transactional`` False) goes to any broker, not a coordinator: a follower answers it with an
        id from the leader (``asks_leader``); while it knows no other leader, COORDINATOR_LOAD_IN_PROGRESS, which
        kafka-python and aiokafka retry without looking up a coordinator (kafka-python looks one up for NOT_COORDINATOR,
        with no key; aiokafka takes other codes as fatal)."""
        served = SERVED_BY.get(api_key, Served.ANY)
        if served is Served.ANY or self.leading:
            return None
        if api_key == ApiKey.InitProducerId and not transactional:
            return None if self.asks_leader else int(kafka_errors.CoordinatorLoadInProgressError.errno)
        known = self.coordinator is not None and self.leader != self.own
        if served is Served.PARTITION_LEADER:
            error: type[kafka_errors.BrokerResponseError] = (
                kafka_errors.NotLeaderForPartitionError if known else kafka_errors.LeaderNotAvailableError)
        elif served is Served.COORDINATOR:
            error = kafka_errors.NotCoordinatorError if known else kafka_errors.CoordinatorNotAvailableError
        else:
            error = kafka_errors.NotControllerError
        return int(error.errno)
