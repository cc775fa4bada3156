"""OperatorActions built from fakes: a resend writes once and is answered when durable; another group's operator learns nothing."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from halfmq.broker.half_messages.half_records import EndOutcome, Tx
from halfmq.broker.half_messages.state_machine import HalfEvent
from halfmq.broker.security.access import ANONYMOUS, Access
from halfmq.broker.security.policy import Action, Resource
from halfmq.broker.usecases.operator_actions import OperatorActions
from halfmq.errors import AccessDenied, TransactionNotFound
from tests.unit.broker.usecases.fakes import SCOPE, DenyingAccess, FakeHalfMessages, FakeViews, RecordingDurable, tx


@dataclass
class FakeChecks:
    rechecked: list[str] = field(default_factory=list)

    def recheck_now(self, tx: Tx) -> None:
        self.rechecked.append(tx.transaction_id)


class KnownHalfMessages(FakeHalfMessages):
    """A transaction id not in the table is not found, as the domain answers."""

    def get(self, transaction_id: str) -> Tx:
        if transaction_id not in self.txs:
            raise TransactionNotFound(f"transaction {transaction_id!r} not found")
        return self.txs[transaction_id]


def operator_actions(access: Access | None = None) -> tuple[OperatorActions, KnownHalfMessages, FakeChecks, RecordingDurable]:
    committed = tx("tx-1", "PG", end_offset=555)
    half_messages = KnownHalfMessages(txs={"tx-1": committed}, outcome=EndOutcome(committed, duplicate=False))
    checks, durable = FakeChecks(), RecordingDurable()
    use_case = OperatorActions(access or Access(None), half_messages, lambda: checks, FakeViews(), durable)  # type: ignore[arg-type]
    return use_case, half_messages, checks, durable


async def test_a_resend_applies_one_resend_event_and_is_answered_once_its_record_is_durable() -> None:
    use_case, half_messages, _, durable = operator_actions()
    view = await use_case.resend(ANONYMOUS, SCOPE, "tx-1")
    assert half_messages.applied == [("tx-1", HalfEvent.RESEND, "operator")]
    assert durable.waited == [555]
    assert view == (half_messages.txs["tx-1"], False)


async def test_a_force_end_ends_the_transaction_with_no_producer_group_to_match() -> None:
    use_case, half_messages, _, _ = operator_actions()
    await use_case.force_end(ANONYMOUS, SCOPE, "tx-1", "rollback")
    assert half_messages.ends == [("tx-1", None, "rollback", False)]


def test_a_recheck_asks_the_check_service_about_the_transaction_now() -> None:
    use_case, _, checks, _ = operator_actions()
    use_case.recheck(ANONYMOUS, SCOPE, "tx-1")
    assert checks.rechecked == ["tx-1"]


async def test_a_transaction_of_a_group_the_caller_may_not_describe_is_answered_as_none_and_nothing_is_done() -> None:
    use_case, half_messages, checks, durable = operator_actions(DenyingAccess((Action.DESCRIBE, Resource.group("PG"))))
    with pytest.raises(TransactionNotFound):
        await use_case.resend(ANONYMOUS, SCOPE, "tx-1")
    with pytest.raises(TransactionNotFound):
        await use_case.force_end(ANONYMOUS, SCOPE, "tx-1", "commit")
    with pytest.raises(TransactionNotFound):
        use_case.recheck(ANONYMOUS, SCOPE, "tx-1")
    assert half_messages.applied == [] and half_messages.ends == [] and checks.rechecked == [] and durable.waited == []


async def test_an_operator_who_may_describe_but_not_administer_the_group_is_refused_and_nothing_is_done() -> None:
    use_case, half_messages, checks, durable = operator_actions(DenyingAccess((Action.ADMIN, Resource.group("PG"))))
    assert use_case.describe(ANONYMOUS, SCOPE, "tx-1")[0].transaction_id == "tx-1"
    with pytest.raises(AccessDenied):
        await use_case.resend(ANONYMOUS, SCOPE, "tx-1")
    with pytest.raises(AccessDenied):
        await use_case.force_end(ANONYMOUS, SCOPE, "tx-1", "commit")
    assert half_messages.applied == [] and half_messages.ends == [] and checks.rechecked == [] and durable.waited == []


def test_listing_transactions_needs_admin_on_the_cluster() -> None:
    from halfmq.broker.security.policy import CLUSTER
    from halfmq.wire import TransactionState
    use_case, _, _, _ = operator_actions()
    assert use_case.list_transactions(ANONYMOUS, SCOPE, TransactionState.PENDING, 10).count == 1
    refusing, _, _, _ = operator_actions(DenyingAccess((Action.ADMIN, CLUSTER)))
    with pytest.raises(AccessDenied):
        refusing.list_transactions(ANONYMOUS, SCOPE, TransactionState.PENDING, 10)
