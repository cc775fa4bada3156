"""A broker set's node's services in the role it has: the composition root's half of a change of role.

The node (broker/cluster/node.py) decides when it leads or follows; what that means for the services (the runtime
built again over the store, the RocketMQ 5 front on while leading) is the root's to do, so the set's domain never
imports the fronts or the runtime (the ``layers`` contract in pyproject.toml)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol

from halfmq.broker.cluster.role_services import Leadership
from halfmq.broker.config import BrokerSettings
from halfmq.broker.store import log_start
from halfmq.broker.store.message_store import MessageStore

from .services import BrokerRuntime, DurableWrapper


class LeadersFront(Protocol):
    """A front only the leader serves (grpc_front.front.LeaderFront: the RocketMQ 5 front, issue 32 C2)."""

    def registration(self, node_id: str, url: str) -> str: ...
    async def lead(self, current: Callable[[], Any], registrations: Callable[[], Awaitable[Iterable[Any]]],
                   members: dict[str, str]) -> None: ...
    async def stop(self) -> None: ...


class LeaderFronts:
    """A set's fronts' changes of role, as one: the RocketMQ 5 front (which names the node in etcd), served only while
    the node leads, and the Kafka front (kafka_front.front.KafkaFront), which every member serves from its start (the
    app starts and stops it) and which is told here when the node leads and when it no longer does."""

    def __init__(self, rocketmq: LeadersFront, kafka: Any, settings: BrokerSettings | None = None) -> None:
        self.rocketmq = rocketmq
        self.kafka = kafka
        self.settings = settings

    def registration(self, node_id: str, url: str) -> str:
        """The RocketMQ front's registration, with this node's Kafka address (the others' Metadata names it)."""
        value = json.loads(self.rocketmq.registration(node_id, url))
        if self.settings is not None:
            value.update(self.kafka.registered_address(self.settings))
        return json.dumps(value)

    async def lead(self, current: Callable[[], Any], registrations: Callable[[], Awaitable[Iterable[Any]]],
                   members: dict[str, str]) -> None:
        await self.rocketmq.lead(current, registrations, members)
        await self.kafka.lead(current)

    async def stop(self) -> None:
        await self.kafka.step_down()
        await self.rocketmq.stop()


class SetRoles:
    """A broker set's node's services in the role it has (cluster.role_services.RoleServices): the runtime built again
    on each change of role, ``front`` on while the node leads. ``holder.runtime`` is the runtime of the moment (the
    app's state: every front reads it there)."""

    def __init__(self, settings: BrokerSettings, holder: Any, front: LeadersFront) -> None:
        self.settings = settings
        self._holder = holder
        self.front = front

    @property
    def store(self) -> MessageStore:
        rt: BrokerRuntime = self._holder.runtime
        return rt.store

    def registration(self, node_id: str, url: str) -> str:
        return self.front.registration(node_id, url)

    async def lead(self, leadership: Leadership) -> None:
        rt = await self._reopen(leadership.durable, keep_store=True)
        rt.delivery.fence = leadership.still_leading
        leadership.opened(rt.store)
        await rt.start()
        await self.front.lead(lambda: self._holder.runtime, leadership.registrations, self.settings.members())

    async def follow(self) -> None:
        await self._reopen(None, keep_store=False)

    async def begin_at(self, start: int, snapshot: Path, also: Mapping[str, bytes]) -> None:
        def begin() -> None:  # the store is closed: nothing reads or writes the data dir meanwhile
            log_start.begin_at(self.settings.data_dir, start, snapshot, also)

        await self._reopen(None, keep_store=False, before_open=begin)

    async def stop(self) -> None:
        """The leader's front off: first, as the app stops (the node and the runtime next)."""
        await self.front.stop()

    async def _reopen(self, durable_wrapper: DurableWrapper | None, keep_store: bool,
                      before_open: Callable[[], None] | None = None) -> BrokerRuntime:
        """Build the runtime for the new role. A promotion keeps the store (no recovery) and builds the services above it
        from what it appended; a step-down reopens it, dropping the leadership's in-memory state (acks of a cut tail)."""
        old: BrokerRuntime = self._holder.runtime
        await self.front.stop()  # no call may reach the runtime that closes
        await old.stop(close_store=not keep_store)
        failed: OSError | None = None
        if before_open is not None:  # (a follower begun at its leader's log start: the data dir changed under the closed store)
            try:
                await asyncio.to_thread(before_open)
            except OSError as refused:  # the store reopens over what is there (its recorded log start is written first)
                failed = refused
        # in a thread: building the services replays the log's state records (and a step-down recovers the store); on the
        # loop it stopped the lease renewals, so past a TTL of work every new leader lost its lease while opening (no leader)
        rt = await asyncio.to_thread(BrokerRuntime.open, self.settings, durable_wrapper=durable_wrapper,
                                     store=old.store if keep_store else None)
        self._holder.runtime = rt
        rt.watch_auth()  # either role answers requests (a follower its reads, broker/api/leader_gate.py)
        if durable_wrapper is None:
            rt.follow_topic_floors()  # a follower's reads hide what its topics' own limits hide (a leader's passes do it)
        if failed is not None:
            raise failed  # said by the caller, after the store is open again
        return rt
