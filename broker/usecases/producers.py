"""Producers' heartbeats (who answers check-backs for a group, at which URL) and their listing."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from halfmq.broker.half_messages.check_url import OwnAddress, validate_check_url
from halfmq.broker.protocol import Heartbeat
from halfmq.broker.security.policy import CLUSTER, Action, Principal, Resource
from halfmq.wire import HeartbeatResult, ProducerList

from .caller import Scope
from .half_sending import producer_group
from .views import producer_groups

if TYPE_CHECKING:
    from halfmq.broker.runtime import BrokerRuntime


async def heartbeat(rt: BrokerRuntime, who: Principal, scope: Scope, body: Heartbeat) -> HeartbeatResult:
    """Register or refresh a producer of a group ``who`` may publish for; its check URL is resolved once and vetted."""
    group = producer_group(body.producer_group)
    rt.access.authorize(who, Action.PUBLISH, Resource.group(group), scope)
    address = None
    if body.check_url:
        known = rt.producers.registered(group, body.client_id, body.check_url)
        if known is not None and known.address is not None:
            address = known.address  # resolved once, at registration: a later DNS answer changes nothing
        else:
            own = rt.own_address or OwnAddress.of(rt.settings.host, rt.settings.port)
            target = await asyncio.to_thread(validate_check_url, body.check_url, rt.settings.check_url_allow, own)
            address = target.address
    registered = rt.producers.heartbeat(group, body.client_id, body.check_url or None, address)
    if registered is not None:  # a registration is answered once its record is durable: a set's next leader checks it back
        await rt.durable(registered)
    return HeartbeatResult(producer_group=group, client_id=body.client_id, expires_in=rt.settings.producer_expiry)


def list_producers(rt: BrokerRuntime, who: Principal, scope: Scope) -> ProducerList:
    """Every producer group's live producers: for cluster admins."""
    rt.access.authorize(who, Action.ADMIN, CLUSTER, scope)
    return ProducerList(groups=producer_groups(rt))


def check_back_groups(rt: BrokerRuntime, who: Principal, groups: list[str]) -> list[str]:
    """Of ``groups``, those ``who`` may publish for: check-backs go only to such producers (no count, no audit line)."""
    return [g for g in groups if rt.access.allows(who, Action.PUBLISH, Resource.group(g))]
