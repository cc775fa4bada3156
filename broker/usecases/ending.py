"""End a transaction (commit, roll back, or "unknown" from a check-back) as its producer.

Ownership: the principal must be allowed to publish for the producer group it
names, and the domain checks that group is the transaction's. Operators end
transactions through ``operator_actions``.
"""

from __future__ import annotations

from dataclasses import dataclass

from halfmq.broker.half_messages.half_records import EndOutcome
from halfmq.broker.observability.tracing import traced_end
from halfmq.broker.security.access import Access
from halfmq.broker.security.policy import Action, Principal, Resource
from halfmq.wire import EndItem, EndRequest, TransactionView

from .caller import Scope
from .durability import FlushTimedOut, flush_outcome
from .ports import Durable, HalfMessages
from .views import Views

__all__ = ["EndOutcome", "Ending"]


@dataclass(eq=False)  # a use case, compared by identity
class Ending:
    access: Access
    half_messages: HalfMessages
    views: Views
    durable: Durable

    @traced_end
    async def end(self, who: Principal, scope: Scope, transaction_id: str, producer_group: str, state: str,
                  *, from_check: bool = False) -> EndOutcome:
        """Apply ``state`` for ``producer_group``, durable when this returns."""
        # Ownership: the body's group must be the transaction's (the domain checks) and the principal's to publish for.
        self.access.authorize(who, Action.PUBLISH, Resource.group(producer_group), scope)
        return await self.half_messages.end(transaction_id, producer_group, state, from_check=from_check)

    async def end_transaction(self, who: Principal, scope: Scope, transaction_id: str, body: EndRequest) -> TransactionView:
        """The HTTP end: the transaction's view after it."""
        outcome = await self.end(who, scope, transaction_id, body.producer_group, body.state, from_check=body.from_check)
        return self.views.tx_view(outcome.tx, duplicate=outcome.duplicate, half=outcome.half)

    @traced_end
    def end_item(self, who: Principal, scope: Scope, item: EndItem) -> EndOutcome:
        """One end of a batch, without its fsync wait (the batch waits once, for the largest ``tx.end_offset``)."""
        # Ownership as the single route: the item's group must be the transaction's (the domain checks it)
        # and one the principal may publish for.
        self.access.authorize(who, Action.PUBLISH, Resource.group(item.producer_group), scope)
        return self.half_messages.end_unflushed(item.transaction_id, item.producer_group, item.state, from_check=item.from_check)

    async def flushed(self, end: int) -> FlushTimedOut | None:
        """Wait once for a batch of ends' ``end`` (the batch route): the timeout as a value."""
        return await flush_outcome(self.durable, end)
