"""The real classes behind the services' ports satisfy the Protocols structurally (no inheritance), as the fakes do.

The project runs no static type checker, so this checks what one would: every method of the
Protocol exists, is async exactly when the Protocol's is, takes the Protocol's parameters in
the same places with a type that accepts the Protocol's, needs nothing more, and returns the
Protocol's type.
"""

from __future__ import annotations

import inspect
import typing
from typing import Any

import pytest

from halfmq.client import AsyncTransactionProducer
from halfmq.client.sqlalchemy.barrier import TransactionBarrier
from halfmq.services.credit.ports import CreditLedger
from halfmq.services.credit.repository import CreditRepository
from halfmq.services.order.ports import Barrier, OrderStore, TransactionReader
from halfmq.services.order.repository import OrderRepository
from tests.unit.services.fakes import FakeBarrier, FakeCreditLedger, FakeOrderRepository


def _accepts(impl: Any, wanted: Any) -> bool:
    return impl is Any or impl == wanted or wanted in typing.get_args(impl)


def mismatches(cls: type, protocol: type) -> list[str]:  # noqa: C901 - one signature comparison, case by case
    found = []
    for name, wanted in vars(protocol).items():
        if name.startswith("_") or not callable(wanted):
            continue
        real = getattr(cls, name, None)
        if real is None:
            found.append(f"{name}: missing")
            continue
        if inspect.iscoroutinefunction(real) != inspect.iscoroutinefunction(wanted):
            found.append(f"{name}: async differs")
        want_params = list(inspect.signature(wanted).parameters.values())[1:]
        real_params = list(inspect.signature(real).parameters.values())[1:]
        want_hints, real_hints = typing.get_type_hints(wanted), typing.get_type_hints(real)
        for i, p in enumerate(want_params):
            q = real_params[i] if i < len(real_params) else None
            if q is None or q.name != p.name or q.kind != p.kind:
                found.append(f"{name}: parameter {p.name} is not in the same place")
            elif p.default is not inspect.Parameter.empty and q.default is inspect.Parameter.empty:
                found.append(f"{name}: {p.name} needs a default")
            elif not _accepts(real_hints.get(q.name, Any), want_hints.get(p.name, Any)):
                found.append(f"{name}: {p.name} does not accept {want_hints.get(p.name)}")
        extra = [q.name for q in real_params[len(want_params):] if q.default is inspect.Parameter.empty
                 and q.kind not in (q.VAR_POSITIONAL, q.VAR_KEYWORD)]
        if extra:
            found.append(f"{name}: also requires {extra}")
        if real_hints.get("return", Any) != want_hints.get("return", Any):
            found.append(f"{name}: returns {real_hints.get('return')}, not {want_hints.get('return')}")
    return found


@pytest.mark.parametrize(("cls", "protocol"), [
    (AsyncTransactionProducer, TransactionReader),
    (TransactionBarrier, Barrier),
    (OrderRepository, OrderStore),
    (CreditRepository, CreditLedger),
    (FakeBarrier, Barrier),
    (FakeBarrier, TransactionReader),
    (FakeOrderRepository, OrderStore),
    (FakeCreditLedger, CreditLedger),
], ids=lambda x: x.__name__)
def test_the_class_satisfies_the_protocol_structurally(cls: type, protocol: type) -> None:
    assert mismatches(cls, protocol) == []
    assert protocol not in cls.__mro__


def test_a_class_missing_a_method_or_a_parameter_is_caught() -> None:
    class Partial:
        async def send(self, producer: AsyncTransactionProducer, topic: str) -> None: ...

    found = mismatches(Partial, Barrier)
    assert found[:5] == [
        "send: parameter message is not in the same place",
        "send: parameter business_key is not in the same place",
        "send: parameter run is not in the same place",
        "send: parameter after_commit is not in the same place",
        "send: parameter also is not in the same place",  # the barrier's companions (H1)
    ]
    assert found[5].startswith("send: returns <class 'NoneType'>, not ")
    assert found[6:] == ["transaction_of: missing"]
