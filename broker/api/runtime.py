"""Everything one broker process runs, built from settings in one place."""

from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Awaitable, Callable

from broker.config import BrokerSettings
from broker.delivery.delivery_service import DeliveryPolicy, DeliveryService
from broker.errors import FlushDiskTimeout, StoreUnavailable
from broker.send_service import SendService, TopicPolicy, TopicService
from broker.store.message_store import MessageStore, StoreConfig
from broker.transaction.check_client import CheckClient
from broker.transaction.check_policy import CheckPolicy
from broker.transaction.check_service import CheckService
from broker.transaction.producer_registry import ProducerRegistry
from broker.transaction.transaction_service import TransactionService

from .metrics import BrokerMetrics, create_metrics

log = logging.getLogger(__name__)


@dataclass
class BrokerRuntime:
    settings: BrokerSettings
    store: MessageStore
    topics: TopicService
    sender: SendService
    delivery: DeliveryService
    transactions: TransactionService
    producers: ProducerRegistry
    metrics: BrokerMetrics
    durable: Callable[[int], Awaitable[None]]
    started_at: float
    checks: CheckService | None = None
    _check_task: asyncio.Task | None = field(default=None, repr=False)

    @classmethod
    def open(cls, settings: BrokerSettings) -> "BrokerRuntime":
        """Lock the data dir, recover the store and rebuild indexes (DataDirLocked / CorruptLogError)."""
        store = MessageStore(StoreConfig(
            data_dir=settings.data_dir,
            segment_bytes=settings.segment_bytes,
            consume_queue_entries=settings.consume_queue_entries,
            flush_mode=settings.flush_mode,
            async_flush_interval=settings.async_flush_interval,
            checkpoint_interval=settings.offset_flush_interval,
        ))
        try:
            topics = TopicService(store, TopicPolicy(settings.auto_create_topics, settings.default_queues, settings.max_message_size))
            delivery = DeliveryService(store, DeliveryPolicy(settings.max_reconsume_times, tuple(settings.retry_delays)))
            durable = FlushWaiter(store, settings.sync_flush_timeout)
            rt: BrokerRuntime  # bound below; the closures only run after that
            transactions = TransactionService(
                store, cls.check_policy(settings), durable, retention=settings.transaction_retention,
                on_finish=lambda seconds: rt.metrics.tx_finish_latency.observe(seconds),
            )
            producers = ProducerRegistry(settings.data_dir / "producers.json", settings.producer_expiry)
            rt = cls(settings, store, topics, SendService(store, topics), delivery, transactions, producers,
                     create_metrics(lambda: rt.state_snapshot()), durable, time.time())
            return rt
        except BaseException:
            store.close()
            raise

    @staticmethod
    def check_policy(settings: BrokerSettings) -> CheckPolicy:
        return CheckPolicy(settings.transaction_timeout, settings.transaction_check_interval, settings.transaction_check_max)

    async def start(self) -> None:
        self.checks = CheckService(
            self.transactions, self.producers, CheckClient(read_timeout=self.settings.check_timeout),
            self.check_policy(self.settings), concurrency=self.settings.check_concurrency,
        )
        self._check_task = asyncio.get_running_loop().create_task(self.checks.run_forever())

    async def stop(self) -> None:
        if self._check_task is not None:
            self._check_task.cancel()
            await asyncio.gather(self._check_task, return_exceptions=True)
        if self.checks is not None:
            await self.checks.drain()
        self.store.close()

    def state_snapshot(self) -> dict:
        tx = self.transactions.stats
        checks = dict(tx.checks)
        if self.checks is not None and self.checks.no_producer:
            checks["no_producer"] = self.checks.no_producer
        return {
            "lag": self.delivery.total_lag(),
            "end": self.store.commit_log.end_offset,
            "flushed": self.store.flushed_offset,
            "fsyncs": self.store.flush_count,
            "dlq": self.delivery.dlq_moves,
            "half_messages": self.transactions.pending_count,
            "commits": tx.commits,
            "rollbacks": tx.rollbacks,
            "discards": tx.discards,
            "checks": checks,
        }



class FlushWaiter:
    """Awaitable "is ``offset`` on disk yet" for sync flush: FlushDiskTimeout past ``timeout``.

    Every request that waits on the same fsync generation awaits one shared asyncio
    future, resolved once from the group-commit thread, with one timer per
    generation instead of a wait_for task per request.
    """

    def __init__(self, store: MessageStore, timeout: float) -> None:
        self._store = store
        self._timeout = timeout
        self._shared: dict[int, asyncio.Future[bool]] = {}

    async def __call__(self, end_offset: int) -> None:
        cf: Future[int] | None = self._store.wait_flushed(end_offset)
        if cf is None or cf.done() and cf.exception() is None:
            return
        key = id(cf)
        shared = self._shared.get(key)
        if shared is None:
            loop = asyncio.get_running_loop()
            shared = self._shared[key] = loop.create_future()
            timer = loop.call_later(self._timeout, self._settle, key, shared, None)
            shared.add_done_callback(lambda _: timer.cancel())
            cf.add_done_callback(lambda f: loop.call_soon_threadsafe(self._settle, key, shared, f))
        await asyncio.shield(shared)

    def _settle(self, key: int, shared: asyncio.Future[bool], done: Future[int] | None) -> None:
        if self._shared.get(key) is shared:
            del self._shared[key]
        if shared.done():
            return
        if done is None:
            shared.set_exception(FlushDiskTimeout(f"fsync did not complete within {self._timeout}s"))
        elif done.exception() is not None:
            shared.set_exception(StoreUnavailable(f"fsync failed: {done.exception()}"))
        else:
            shared.set_result(True)
