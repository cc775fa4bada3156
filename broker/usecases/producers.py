"""Producers' heartbeats (who answers check-backs for a group, at which URL) and their listing."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from halfmq.broker.half_messages.check_url import OwnAddress, validate_check_url
from halfmq.broker.security.access import Access
from halfmq.broker.security.policy import Action, Principal, Resource
from halfmq.wire import Heartbeat, HeartbeatResult, ProducerList

from .caller import Scope
from .half_sending import producer_group
from .ports import Durable, Registry
from .views import Views


@dataclass(eq=False)  # a use case, compared by identity
class Heartbeats:
    access: Access
    producers: Registry
    views: Views
    durable: Durable
    own_address: OwnAddress
    check_url_allow: list[str]
    producer_expiry: float

    async def heartbeat(self, who: Principal, scope: Scope, body: Heartbeat) -> HeartbeatResult:
        """Register or refresh a producer of a group ``who`` may publish for; its check URL is resolved once and vetted."""
        group = producer_group(body.producer_group)
        self.access.authorize(who, Action.PUBLISH, Resource.group(group), scope)
        address = None
        if body.check_url:
            known = self.producers.registered(group, body.client_id, body.check_url)
            if known is not None and known.address is not None:
                address = known.address  # resolved once, at registration: a later DNS answer changes nothing
            else:
                target = await asyncio.to_thread(validate_check_url, body.check_url, self.check_url_allow, self.own_address)
                address = target.address
        registered = self.producers.heartbeat(group, body.client_id, body.check_url or None, address)
        if registered is not None:  # a registration is answered once its record is durable: a set's next leader checks it back
            await self.durable(registered)
        return HeartbeatResult(producer_group=group, client_id=body.client_id, expires_in=self.producer_expiry)

    def list_producers(self, who: Principal, scope: Scope) -> ProducerList:
        """Every producer group's live producers: for cluster admins."""
        self.access.cluster_admin(who, scope)
        return ProducerList(groups=self.views.producer_groups())

    def check_back_groups(self, who: Principal, groups: list[str]) -> list[str]:
        """Of ``groups``, those ``who`` may publish for: check-backs go only to such producers (no count, no audit line)."""
        return [g for g in groups if self.access.allows(who, Action.PUBLISH, Resource.group(g))]
