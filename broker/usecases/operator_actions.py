"""Operators' transaction views and actions: list, describe, force commit or roll back, check back now, resend.

Through the API each needs the right on the transaction's producer group
(``owned``); the console's session is a cluster admin and calls the ``*_now``
steps directly (``console_views``' page, ``cluster_admin``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from halfmq.broker.half_messages.half_records import EndOutcome, Tx, not_found
from halfmq.broker.half_messages.state_machine import HalfEvent
from halfmq.broker.security.policy import CLUSTER, Action, Principal, Resource
from halfmq.errors import AccessDenied
from halfmq.wire import TransactionList, TransactionState, TransactionView

from .caller import Scope
from .views import tx_view

if TYPE_CHECKING:
    from halfmq.broker.runtime import BrokerRuntime


def cluster_admin(rt: BrokerRuntime, who: Principal, scope: Scope) -> Principal:
    """``who``, allowed to administer the whole broker (listings, metrics, the console): AccessDenied otherwise."""
    rt.access.authorize(who, Action.ADMIN, CLUSTER, scope)
    return who


def list_transactions(rt: BrokerRuntime, who: Principal, scope: Scope, state: TransactionState, limit: int) -> TransactionList:
    cluster_admin(rt, who, scope)
    txs = rt.half_messages.pending() if state is TransactionState.PENDING else rt.half_messages.in_state(state)
    return TransactionList(state=state, count=len(txs), transactions=[tx_view(rt, tx) for tx in txs[:limit]])


def owned(rt: BrokerRuntime, who: Principal, scope: Scope, transaction_id: str, action: Action) -> Tx:
    """The transaction, if the caller may ``action`` its producer group.

    No oracle: asked who first (401 before 404), and a transaction of a group the caller may not even describe is
    answered as none at all (404), so a principal of another group cannot tell which ids exist.
    """
    tx = rt.half_messages.get(transaction_id)
    try:
        rt.access.authorize(who, Action.DESCRIBE, Resource.group(tx.producer_group), scope)  # counted, audited
    except AccessDenied:
        raise not_found(transaction_id) from None
    rt.access.authorize(who, action, Resource.group(tx.producer_group), scope)
    return tx


def describe(rt: BrokerRuntime, who: Principal, scope: Scope, transaction_id: str) -> TransactionView:
    return tx_view(rt, owned(rt, who, scope, transaction_id, Action.DESCRIBE))


async def end_now(rt: BrokerRuntime, transaction_id: str, state: str) -> EndOutcome:
    """Commit or roll back as an operator (no producer group to match), durable when this returns."""
    return await rt.half_messages.end(transaction_id, None, state)


def recheck_now(rt: BrokerRuntime, transaction_id: str) -> None:
    """Ask the producer about the transaction at once instead of at its next check time."""
    assert rt.checks is not None
    rt.checks.recheck_now(rt.half_messages.get(transaction_id))


async def resend_now(rt: BrokerRuntime, transaction_id: str, note: str) -> EndOutcome:
    """Deliver a committed transaction's message once more, durable when this returns."""
    outcome = rt.half_messages.apply(rt.half_messages.get(transaction_id), HalfEvent.RESEND, note=note)
    await rt.durable(outcome.tx.end_offset)
    return outcome


async def force_end(rt: BrokerRuntime, who: Principal, scope: Scope, transaction_id: str, state: str) -> TransactionView:
    owned(rt, who, scope, transaction_id, Action.ADMIN)
    outcome = await end_now(rt, transaction_id, state)
    return tx_view(rt, outcome.tx, duplicate=outcome.duplicate)


def recheck(rt: BrokerRuntime, who: Principal, scope: Scope, transaction_id: str) -> TransactionView:
    tx = owned(rt, who, scope, transaction_id, Action.ADMIN)
    recheck_now(rt, transaction_id)
    return tx_view(rt, tx)


async def resend(rt: BrokerRuntime, who: Principal, scope: Scope, transaction_id: str) -> TransactionView:
    owned(rt, who, scope, transaction_id, Action.ADMIN)
    outcome = await resend_now(rt, transaction_id, "operator")
    return tx_view(rt, outcome.tx, duplicate=outcome.duplicate)
