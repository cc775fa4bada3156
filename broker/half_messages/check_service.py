"""The check-back loop: find due half messages, ask a live producer, apply the answer.

Only I/O lives here; what to do with each transaction is ``check_policy.decide``.
A failure while handling one transaction or calling one producer is logged and
contained: the transaction is asked again next interval (not counted), the next
producer of the group is tried, and the rest of the round goes on. A round once
ended at the first exception, and the due transactions it had already taken off
the schedule were never checked again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Protocol

import msgspec

from halfmq.broker.messages.view import restored_view
from halfmq.broker.observability import tracing
from halfmq.broker.store.message_store import StoreNotWritable
from halfmq.broker.store.record import StoredMessage
from halfmq.errors import DamagedRecord, StoreUnavailable, TransactionConflict
from halfmq.wire import TransactionState

from .check_client import CheckAnswer, CheckClient, CheckOutcome
from .check_policy import CheckDecision, CheckPolicy, decide
from .half_message_service import HalfMessageService
from .half_records import Tx
from .producer_registry import ProducerEntry, ProducerRegistry
from .state_machine import HalfEvent

log = logging.getLogger(__name__)


class PushTransport(Protocol):
    """A second way to reach producers: a check pushed on a stream they hold open (RocketMQ 5's telemetry).

    The producer answers by ending the transaction itself (from_check), so a push only counts the check.
    """

    def connected(self, group: str) -> bool: ...

    def push(self, transaction_id: str, group: str, half: StoredMessage) -> bool: ...


class CheckService:
    def __init__(
        self,
        transactions: HalfMessageService,
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
        self.push_transport: PushTransport | None = None  # set by the gRPC front when it runs

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
            try:
                started += self._handle_due(tx, now)
            except Exception:
                log.exception("check of %s (producer group %r) failed; asking again next interval", tx.transaction_id, tx.producer_group)
                self._txs.reschedule(tx, now + self._policy.check_interval)
        return started

    def _handle_due(self, tx: Tx, now: float) -> int:
        """Act on one due transaction; return 1 when a check-back call was started."""
        decision = decide(now=now, due_at=tx.due_at, check_times=tx.check_times,
                          has_producer=bool(self._registry.live(tx.producer_group)) or self._pushable(tx.producer_group),
                          policy=self._policy)
        if decision is CheckDecision.DISCARD:
            try:
                self._txs.apply(tx, HalfEvent.DISCARD, note="check max")
            except StoreNotWritable:  # a full disk (the store logs it): discard at the next check
                self._txs.reschedule(tx, now + self._policy.check_interval)
        elif decision is CheckDecision.NO_PRODUCER:
            self.no_producer += 1
            self._txs.reschedule(tx, now + self._policy.check_interval)
        elif decision is CheckDecision.CHECK:
            self._txs.reschedule(tx, now + self._policy.check_interval + self.in_flight_grace)
            task = asyncio.get_running_loop().create_task(self._check(tx))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            return 1
        return 0

    def _pushable(self, group: str) -> bool:
        return self.push_transport is not None and self.push_transport.connected(group)

    async def _check(self, tx: Tx) -> None:
        try:
            await self._check_one(tx)
        except Exception:  # the transaction stays scheduled (run_once moved it on before starting this)
            log.exception("check of %s (producer group %r) failed", tx.transaction_id, tx.producer_group)

    async def _ask(self, tx: Tx, producer: ProducerEntry, payload: dict) -> CheckAnswer:
        try:
            return await self._client.check(producer.check_url or "", payload, producer.address)
        except Exception as exc:
            log.exception("check of %s: calling producer %s failed", tx.transaction_id, producer.client_id)
            return CheckAnswer(CheckOutcome.UNREACHABLE, f"{type(exc).__name__}: {exc}")

    async def _check_one(self, tx: Tx) -> None:
        group_sem = self._per_group.setdefault(tx.producer_group, asyncio.Semaphore(self._per_group_limit))
        async with self._global, group_sem:
            try:
                message = restored_view(self._txs.half_message(tx))
            except DamagedRecord:
                return  # reported by the store; the producer or an operator can still roll it back
            if self._pushed(tx):
                return
            payload = {
                "transaction_id": tx.transaction_id,
                "producer_group": tx.producer_group,
                "check_times": tx.check_times + 1,
                "message": msgspec.to_builtins(message),  # the check request's JSON, as the producer's check app reads it
            }
            answer = await tracing.checking(tx.transaction_id, tx.producer_group, tx.check_times + 1, message, self._ask_in_turn(tx, payload))
            if tx.state is not TransactionState.PENDING:
                return  # ended by the producer while we were asking
            if answer is None or not answer.reached:
                self.no_producer += 1
                self._txs.reschedule(tx, self._clock() + self._policy.check_interval)
                return
            await self._act_on(tx, answer)

    def _pushed(self, tx: Tx) -> bool:
        """Whether the check went down a pushing front's stream (the RocketMQ front's telemetry): then no HTTP call."""
        if self.push_transport is None or not self._pushable(tx.producer_group):
            return False
        if not self.push_transport.push(tx.transaction_id, tx.producer_group, self._txs.half_message(tx)):
            return False
        try:
            self._txs.record_check(tx, "pushed")
        except (StoreNotWritable, StoreUnavailable):
            self._txs.reschedule(tx, self._clock() + self._policy.check_interval)
        return True

    async def _ask_in_turn(self, tx: Tx, payload: dict) -> CheckAnswer | None:
        """The first answer of the group's producers that is reached (or the last one tried; None: no producer)."""
        answer = None
        for producer in self._registry.rotation(tx.producer_group):
            answer = await self._ask(tx, producer, payload)
            if answer.reached:
                break
            log.info("check of %s: producer %s unreachable (%s)", tx.transaction_id, producer.client_id, answer.detail)
        return answer

    async def _act_on(self, tx: Tx, answer: CheckAnswer) -> None:
        """Record the producer's answer, and end the transaction when it says commit or rollback."""
        try:
            self._txs.record_check(tx, answer.outcome.value)
            if answer.outcome in (CheckOutcome.COMMIT, CheckOutcome.ROLLBACK):
                try:
                    await self._txs.end(tx.transaction_id, tx.producer_group, answer.outcome.value, from_check=True)
                except TransactionConflict:
                    pass
            elif answer.outcome is not CheckOutcome.UNKNOWN:
                log.info("check of %s: %s %s", tx.transaction_id, answer.outcome.value, answer.detail)
        except (StoreNotWritable, StoreUnavailable):  # a full disk (the store logs it): ask again next interval
            self._txs.reschedule(tx, self._clock() + self._policy.check_interval)

    def recheck_now(self, tx: Tx) -> None:
        if tx.state is not TransactionState.PENDING:
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
