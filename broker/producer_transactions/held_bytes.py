"""The bytes open producer transactions hold in memory: a broker-wide cap and a cap per principal.

An open transaction's messages wait in memory for its commit (``producer_transactions``), and a
transaction may stay open up to 15 minutes, so without a bound a few producers could take the
broker's memory: 40 transactional ids x 15 MB took it from 77 to 663 MiB (issue 30). This ledger is
the whole decision: ``hold`` admits a request's bytes or refuses them with OPEN_TRANSACTIONS_FULL
(429) before anything is kept; ``release`` gives back everything a transactional id held, on commit,
abort, timeout, a new epoch and recovery. Nothing here is durable: an open transaction never survives
a restart (recovery aborts it), so a restarted broker starts from zero, which is exact.

With auth off there are no principals to tell apart (every request is the anonymous superuser):
``principal=None`` and the broker-wide cap alone applies.
"""

from __future__ import annotations

from halfmq.errors import OpenTransactionsFull


class HeldBytes:
    def __init__(self, cap: int, per_principal: int) -> None:
        self.cap = cap
        self.per_principal = per_principal
        self.total = 0
        self._by_principal: dict[str, int] = {}
        self._by_tid: dict[str, dict[str | None, int]] = {}  # who put how much into each open transaction

    def of(self, principal: str) -> int:
        return self._by_principal.get(principal, 0)

    def held_by(self, tid: str) -> int:
        return sum(self._by_tid.get(tid, {}).values())

    def hold(self, tid: str, principal: str | None, size: int) -> None:
        """Count ``size`` more bytes for ``tid``, put there by ``principal``; refused (nothing counted) past a cap."""
        if principal is not None:
            mine = self.of(principal)
            if mine + size > self.per_principal:
                raise OpenTransactionsFull(
                    f"open transactions of {principal!r} hold {mine} bytes; {size} more would pass the cap of "
                    f"{self.per_principal} per principal: commit or abort one first",
                    scope="principal", limit_bytes=self.per_principal, held_bytes=mine, request_bytes=size)
        if self.total + size > self.cap:
            raise OpenTransactionsFull(
                f"open transactions hold {self.total} bytes; {size} more would pass the broker's cap of {self.cap}",
                scope="broker", limit_bytes=self.cap, held_bytes=self.total, request_bytes=size)
        if principal is not None:
            self._by_principal[principal] = self.of(principal) + size
        self.total += size
        held = self._by_tid.setdefault(tid, {})
        held[principal] = held.get(principal, 0) + size

    def release(self, tid: str) -> int:
        """Give back every byte ``tid``'s transaction held (0 when it held none); returns how many."""
        held = self._by_tid.pop(tid, {})
        for principal, size in held.items():
            self.total -= size
            if principal is not None:
                left = self._by_principal[principal] - size
                if left:
                    self._by_principal[principal] = left
                else:
                    del self._by_principal[principal]
        return sum(held.values())
