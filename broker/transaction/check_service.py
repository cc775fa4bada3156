"""The check-back loop: find due half messages, ask a live producer, apply the answer.

Only I/O lives here; what to do with each transaction is ``check_policy.decide``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Callable

from broker.errors import TransactionConflict
from broker.message_view import restored_view

from .check_client import CheckClient, CheckOutcome
from .check_policy import CheckDecision, CheckPolicy, decide
from .producer_registry import ProducerRegistry
from .state_machine import TxEvent, TxState
from .transaction_service import TransactionService, Tx

log = logging.getLogger(__name__)


class CheckService:
    def __init__(
        self,
        transactions: TransactionService,
        registry: ProducerRegistry,
        client: CheckClient,
        policy: CheckPolicy,
        *,
        concurrency: int = 16,
        per_group: int = 4,
        tick: float = 0.5,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._txs = transactions
        self._registry = registry
        self._client = client
        self._policy = policy
        self._global = asyncio.Semaphore(concurrency)
        self._per_group_limit = per_group
        self._per_group: dict[str, asyncio.Semaphore] = {}
        self._tick = min(tick, policy.check_interval)
        self._clock = clock
        self._tasks: set[asyncio.Task] = set()
        self.no_producer = 0
        self.in_flight_grace = 5.0

    async def run_forever(self) -> None:
        while True:
            try:
                self.run_once()
            except Exception:
                log.exception("check scan failed")
            await asyncio.sleep(self._tick)

    def run_once(self) -> int:
        """Handle every due transaction now; return how many checks were started."""
        now = self._clock()
        started = 0
        for tx in self._txs.due(now):
            decision = decide(now=now, due_at=tx.due_at, check_times=tx.check_times,
                              has_producer=bool(self._registry.live(tx.producer_group)), policy=self._policy)
            if decision is CheckDecision.DISCARD:
                self._txs.apply(tx, TxEvent.DISCARD, note="check max")
            elif decision is CheckDecision.NO_PRODUCER:
                self.no_producer += 1
                self._txs.reschedule(tx, now + self._policy.check_interval)
            elif decision is CheckDecision.CHECK:
                self._txs.reschedule(tx, now + self._policy.check_interval + self.in_flight_grace)
                task = asyncio.get_running_loop().create_task(self._check(tx))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
                started += 1
        return started

    async def _check(self, tx: Tx) -> None:
        group_sem = self._per_group.setdefault(tx.producer_group, asyncio.Semaphore(self._per_group_limit))
        async with self._global, group_sem:
            payload = {
                "transaction_id": tx.transaction_id,
                "producer_group": tx.producer_group,
                "check_times": tx.check_times + 1,
                "message": restored_view(self._txs.half_message(tx)),
            }
            answer = None
            for producer in self._registry.rotation(tx.producer_group):
                answer = await self._client.check(producer.check_url or "", payload, producer.address)
                if answer.reached:
                    break
                log.info("check of %s: producer %s unreachable (%s)", tx.transaction_id, producer.client_id, answer.detail)
            if tx.state is not TxState.PENDING:
                return  # ended by the producer while we were asking
            if answer is None or not answer.reached:
                self.no_producer += 1
                self._txs.reschedule(tx, self._clock() + self._policy.check_interval)
                return
            self._txs.record_check(tx, answer.outcome.value)
            if answer.outcome in (CheckOutcome.COMMIT, CheckOutcome.ROLLBACK):
                try:
                    await self._txs.end(tx.transaction_id, tx.producer_group, answer.outcome.value, from_check=True)
                except TransactionConflict:
                    pass
            elif answer.outcome is not CheckOutcome.UNKNOWN:
                log.info("check of %s: %s %s", tx.transaction_id, answer.outcome.value, answer.detail)

    def recheck_now(self, tx: Tx) -> None:
        if tx.state is not TxState.PENDING:
            raise TransactionConflict(f"transaction is {tx.state.value}; only pending transactions can be rechecked", state=tx.state.value)
        self._txs.reschedule(tx, self._clock())

    async def wait_idle(self) -> None:
        """Wait for the checks already started (tests and shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def drain(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._client.aclose()
