"""Operators' transaction views and actions: list, describe, force commit or roll back, check back now, resend.

Through the API each needs the right on the transaction's producer group
(``owned``); the console's session is a cluster admin and calls the ``*_now``
steps with its ``ClusterAdmin`` grant (``console_views``' pages).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from halfmq.broker.half_messages.half_records import EndOutcome, Tx, not_found
from halfmq.broker.half_messages.state_machine import HalfEvent
from halfmq.broker.security.access import Access, ClusterAdmin, GroupAdmin
from halfmq.broker.security.policy import Action, Principal, Resource
from halfmq.errors import AccessDenied
from halfmq.wire import TransactionList, TransactionState, TransactionView

from .caller import Scope
from .ports import Checks, Durable, HalfMessages
from .views import Views


@dataclass(eq=False)  # a use case, compared by identity
class OperatorActions:
    access: Access
    half_messages: HalfMessages
    checks: Callable[[], Checks | None]
    views: Views
    durable: Durable

    def list_transactions(self, who: Principal, scope: Scope, state: TransactionState, limit: int) -> TransactionList:
        self.access.cluster_admin(who, scope)
        txs = self.half_messages.pending() if state is TransactionState.PENDING else self.half_messages.in_state(state)
        return TransactionList(state=state, count=len(txs), transactions=[self.views.tx_view(tx) for tx in txs[:limit]])

    def owned(self, who: Principal, scope: Scope, transaction_id: str, action: Action) -> Tx:
        """The transaction, if the caller may ``action`` its producer group.

        No oracle: asked who first (401 before 404), and a transaction of a group the caller may not even describe is
        answered as none at all (404), so a principal of another group cannot tell which ids exist.
        """
        tx = self._visible(who, scope, transaction_id)
        self.access.authorize(who, action, Resource.group(tx.producer_group), scope)
        return tx

    def _visible(self, who: Principal, scope: Scope, transaction_id: str) -> Tx:
        tx = self.half_messages.get(transaction_id)
        try:
            self.access.authorize(who, Action.DESCRIBE, Resource.group(tx.producer_group), scope)  # counted, audited
        except AccessDenied:
            raise not_found(transaction_id) from None
        return tx

    def describe(self, who: Principal, scope: Scope, transaction_id: str) -> TransactionView:
        return self.views.tx_view(self.owned(who, scope, transaction_id, Action.DESCRIBE))

    async def end_now(self, admin: ClusterAdmin | GroupAdmin, transaction_id: str, state: str) -> EndOutcome:
        """Commit or roll back as an operator (no producer group to match), durable when this returns."""
        return await self.half_messages.end(transaction_id, None, state)

    def recheck_now(self, admin: ClusterAdmin | GroupAdmin, transaction_id: str) -> None:
        """Ask the producer about the transaction at once instead of at its next check time."""
        checks = self.checks()
        assert checks is not None, "only a node that writes rechecks"
        checks.recheck_now(self.half_messages.get(transaction_id))

    async def resend_now(self, admin: ClusterAdmin | GroupAdmin, transaction_id: str, note: str) -> EndOutcome:
        """Deliver a committed transaction's message once more, durable when this returns."""
        outcome = self.half_messages.apply(self.half_messages.get(transaction_id), HalfEvent.RESEND, note=note)
        await self.durable(outcome.tx.end_offset)
        return outcome

    def _owning_admin(self, who: Principal, scope: Scope, transaction_id: str) -> tuple[Tx, GroupAdmin]:
        """The transaction and the grant its operator actions take, for one with ``admin`` on its producer group."""
        tx = self._visible(who, scope, transaction_id)
        return tx, self.access.group_admin(who, scope, tx.producer_group)

    async def force_end(self, who: Principal, scope: Scope, transaction_id: str, state: str) -> TransactionView:
        _, admin = self._owning_admin(who, scope, transaction_id)
        outcome = await self.end_now(admin, transaction_id, state)
        return self.views.tx_view(outcome.tx, duplicate=outcome.duplicate)

    def recheck(self, who: Principal, scope: Scope, transaction_id: str) -> TransactionView:
        tx, admin = self._owning_admin(who, scope, transaction_id)
        self.recheck_now(admin, transaction_id)
        return self.views.tx_view(tx)

    async def resend(self, who: Principal, scope: Scope, transaction_id: str) -> TransactionView:
        _, admin = self._owning_admin(who, scope, transaction_id)
        outcome = await self.resend_now(admin, transaction_id, "operator")
        return self.views.tx_view(outcome.tx, duplicate=outcome.duplicate)
