"""The order service's domain errors: one class per refusal, each with its stable code.

``routes.PROBLEM_STATUS`` gives each its HTTP status; nothing here knows HTTP.
"""

from __future__ import annotations

from ..errors import ServiceError


class OrderError(ServiceError):
    """Any refusal of the order service."""


class FaultsDisabled(OrderError):
    code = "FAULTS_DISABLED"


class UnknownFault(OrderError):
    code = "UNKNOWN_FAULT"


class OrderNotFound(OrderError):
    code = "ORDER_NOT_FOUND"


class IdempotencyKeyReused(OrderError):
    """The key was bound to an order with another user or amount: a retry must ask for the same order."""

    code = "IDEMPOTENCY_KEY_REUSED"


class OrderCancelled(OrderError):
    """The order was cancelled (its payment fell due unpaid): it can no longer be paid."""

    code = "ORDER_CANCELLED"


class BrokerUnreachable(OrderError):
    """The half message was refused or never arrived: nothing was placed."""

    code = "BROKER_UNAVAILABLE"
    retriable = True


class BrokerNotDurable(OrderError):
    """The broker stored the half message without knowing it durable, so it is rolled back unrun."""

    code = "BROKER_NOT_DURABLE"
    retriable = True


class LocalTransactionFailed(OrderError):
    """The order did not commit in the database, so its message was rolled back."""

    code = "LOCAL_TRANSACTION_FAILED"
    retriable = True


class OrderAlreadyRefunded(OrderError):
    """The order has its refund already: a repeated refund refunds nothing more, and every repeat gets this answer."""

    code = "ORDER_ALREADY_REFUNDED"


class OrderNotSent(OrderError):
    """The order's message is not (yet) on ORDER_TOPIC: a refund sent now could be credited before its order."""

    code = "ORDER_NOT_SENT"
    retriable = True
