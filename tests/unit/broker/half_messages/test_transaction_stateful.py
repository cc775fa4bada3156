"""Random sequences of halves, ends, check answers and restarts against the real transaction layer.

Invariants: a half message is never visible; a committed one is visible exactly
once; a rolled-back or discarded one never; an outcome never flips; checks never
exceed the max.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, rule

from halfmq.broker.half_messages.check_client import CheckOutcome
from halfmq.broker.half_messages.check_policy import CheckPolicy
from halfmq.broker.half_messages.check_service import CheckService
from halfmq.broker.half_messages.half_message_service import HalfMessageService
from halfmq.broker.half_messages.producer_registry import ProducerRegistry
from halfmq.broker.store.flush_waiter import FlushWaiter
from halfmq.broker.store.message_store import MessageStore, PutItem, StoreConfig
from halfmq.errors import TransactionConflict, TransactionNotFound
from halfmq.wire import TransactionState

from .fakes import FakeClock, ScriptedCheckClient

POLICY = CheckPolicy(transaction_timeout=6, check_interval=5, check_max=3)
ANSWERS = [CheckOutcome.COMMIT, CheckOutcome.ROLLBACK, CheckOutcome.UNKNOWN, CheckOutcome.TIMEOUT,
           CheckOutcome.ERROR, CheckOutcome.DEFERRED, CheckOutcome.UNREACHABLE]
FINAL = {TransactionState.COMMITTED, TransactionState.ROLLED_BACK, TransactionState.DISCARDED}


class TransactionMachine(RuleBasedStateMachine):
    txs = Bundle("txs")

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="halfmq-hyp-"))
        self.loop = asyncio.new_event_loop()
        self.clock = FakeClock()
        self.client = ScriptedCheckClient()
        self.model: dict[str, TransactionState] = {}
        self.body: dict[str, bytes] = {}
        self.counter = 0
        self._open()

    def _open(self) -> None:
        self.store = MessageStore(StoreConfig(self.dir, flush_mode="async", segment_bytes=64 * 1024), clock=self.clock)
        self.store.create_topic("ORDERS", 2)
        self.service = HalfMessageService(self.store, POLICY, FlushWaiter(self.store, 5), clock=self.clock)
        self.registry = ProducerRegistry(None, expiry=1e9, clock=self.clock)
        self.registry.heartbeat("pg", "c1", "http://127.0.0.1:1/check")
        self.checks = CheckService(self.service, self.registry, self.client, POLICY, clock=self.clock)

    def run(self, coro):
        return self.loop.run_until_complete(coro)

    @rule(target=txs, queue=st.integers(0, 1))
    def half(self, queue: int) -> str:
        self.counter += 1
        body = f"tx-{self.counter}".encode()
        tx, _ = self.service.send_half("pg", PutItem("ORDERS", queue, body, {"UNIQ_KEY": body.decode()}), 2)
        self.model[tx.transaction_id] = TransactionState.PENDING
        self.body[tx.transaction_id] = body
        return tx.transaction_id

    @rule(txid=txs, state=st.sampled_from(["commit", "rollback", "unknown"]), from_check=st.booleans())
    def end(self, txid: str, state: str, from_check: bool) -> None:
        before = self.model[txid]
        expected = {"commit": TransactionState.COMMITTED, "rollback": TransactionState.ROLLED_BACK}.get(state, before)
        legal = before is TransactionState.PENDING or expected is before
        try:
            outcome = self.run(self.service.end(txid, "pg", state, from_check=from_check))
        except TransactionConflict:
            assert not legal, f"{state} on {before} should be allowed"
            return
        assert legal, f"{state} on {before} should be a conflict"
        assert outcome.tx.state is expected
        assert outcome.duplicate == (before is not TransactionState.PENDING)
        self.model[txid] = expected

    @rule(txid=txs)
    def end_from_the_wrong_group(self, txid: str) -> None:
        try:
            self.run(self.service.end(txid, "intruder", "commit"))
        except TransactionNotFound:  # another group's transaction is answered as none at all
            return
        raise AssertionError("a foreign producer group ended a transaction")

    @rule(answers=st.lists(st.sampled_from(ANSWERS), max_size=6), seconds=st.sampled_from([1.0, 5.0, 6.0]))
    def check_round(self, answers: list[CheckOutcome], seconds: float) -> None:
        self.client.script.extend(answers)
        self.clock.advance(seconds)
        self.run(self._check_round())
        self.client.script.clear()
        for txid, state in self.model.items():
            now = self.service.get(txid).state
            if state in FINAL:
                assert now is state, f"{txid} flipped from {state} to {now}"
            self.model[txid] = now

    async def _check_round(self) -> None:
        self.checks.run_once()
        await self.checks.wait_idle()

    @rule()
    def restart(self) -> None:
        self.store.close()
        self._open()
        for txid, state in self.model.items():
            assert self.service.get(txid).state is state

    @invariant()
    def committed_visible_exactly_once_and_nothing_else(self) -> None:
        visible = Counter(m.body for q in range(2) for m in self.store.reads.read_queue("ORDERS", q, 0, 100_000))
        committed = Counter(self.body[t] for t, s in self.model.items() if s is TransactionState.COMMITTED)
        assert visible == committed

    @invariant()
    def checks_never_exceed_the_max(self) -> None:
        for txid in self.model:
            assert self.service.get(txid).check_times <= POLICY.check_max

    def teardown(self) -> None:
        self.store.close()
        self.loop.close()
        shutil.rmtree(self.dir, ignore_errors=True)


TransactionMachine.TestCase.settings = settings(
    max_examples=60, stateful_step_count=30, deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_transactions_keep_their_invariants = TransactionMachine.TestCase
