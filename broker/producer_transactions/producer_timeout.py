"""When the broker aborts a producer transaction, and when it forgets a transactional id: pure decisions over an
explicit clock value.

Kafka's rule, not RocketMQ's: an open transaction that outlives its producer's
``transaction_timeout_ms`` is aborted, with no check-back. The loop that acts
on these answers only does I/O (``TransactionCoordinator.abort_expired``).
"""

from __future__ import annotations

from halfmq.errors import InvalidTransactionTimeout

from .producer_state_machine import ProducerTxnState

DEFAULT_TIMEOUT_MS = 60_000
MAX_TIMEOUT_MS = 15 * 60_000  # Kafka's transaction.max.timeout.ms


def checked_timeout(timeout_ms: int | None) -> int:
    """The timeout a producer asked for, or the default; INVALID_TRANSACTION_TIMEOUT (400) out of 1 ms..15 min."""
    if timeout_ms is None:
        return DEFAULT_TIMEOUT_MS
    if not 1 <= timeout_ms <= MAX_TIMEOUT_MS:
        raise InvalidTransactionTimeout(f"transaction_timeout_ms must be 1..{MAX_TIMEOUT_MS}, not {timeout_ms}",
                                        max=MAX_TIMEOUT_MS)
    return timeout_ms


def deadline_ms(begun_ms: int, timeout_ms: int) -> int:
    return begun_ms + timeout_ms


def is_expired(begun_ms: int, timeout_ms: int, now_ms: int) -> bool:
    """True once the transaction has been open longer than its timeout."""
    return now_ms > deadline_ms(begun_ms, timeout_ms)


def expired(open_transactions: dict[str, tuple[int, int]], now_ms: int) -> list[str]:
    """The transactional ids (of ``{tid: (begun_ms, timeout_ms)}``) whose open transaction must be aborted now."""
    return sorted(tid for tid, (begun, timeout) in open_transactions.items() if is_expired(begun, timeout, now_ms))


def idle_since_ms(last_used_ms: int, begun_ms: int, ended_ms: int | None) -> int:
    """When a transactional id was last used: its init, its last transaction's begin or end, or a numbered send."""
    return max(last_used_ms, begun_ms, ended_ms or 0)


def id_expired(state: ProducerTxnState, idle_since: int, now_ms: int, expiry_ms: int) -> bool:
    """True once a transactional id may be forgotten for good (Kafka's ``transactional.id.expiration.ms``): no
    transaction open, and nothing done with it for longer than ``expiry_ms``. It is then in no later state snapshot,
    and an init that names it again starts at a new producer id and epoch 0."""
    return state is not ProducerTxnState.ONGOING and now_ms - idle_since > expiry_ms
