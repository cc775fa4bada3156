"""An idempotent producer's numbers (DESIGN section 11): its producer id and epoch, and the next sequence.

Shared by ``Producer``/``AsyncProducer`` (plain and batch sends) and the transaction producers (half sends).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from halfmq.broker.wire import TxnInitResult

from . import endpoints
from .endpoints import Call

__all__ = ["Numbering"]


class Numbering:
    """An idempotent producer's numbers: a producer id and epoch from ``init`` of its id, and the next sequence.

    Every retry of a send carries the same number, so the broker answers it from what it stored. A send that
    fails for good leaves its fate unknown: the next send takes a new epoch (a fresh ``init``), so it never
    meets a gap. Numbered sends go one at a time; use one producer per thread or task for more in flight.
    """

    def __init__(self, idempotent_id: str) -> None:
        self.idempotent_id = idempotent_id
        self.ids: dict[str, int] | None = None
        self.sequence = 0

    def init(self) -> Call[TxnInitResult]:
        return endpoints.txn_init(self.idempotent_id, None)

    def initialised(self, result: TxnInitResult) -> None:
        self.ids, self.sequence = {"producer_id": result.producer_id, "epoch": result.epoch}, 0

    def next(self) -> dict[str, int]:
        assert self.ids is not None
        return {**self.ids, "sequence": self.sequence}

    def sent(self) -> None:
        self.sequence += 1

    def failed(self) -> None:
        self.ids = None

    def numbered(self, call: Call[Any]) -> Call[Any]:
        """``call`` with this producer's numbers added to its body."""
        return replace(call, body={**call.body, **self.next()})
