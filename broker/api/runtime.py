"""Everything one broker process runs, built from settings in one place."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import Future
from dataclasses import dataclass

from broker.config import BrokerSettings
from broker.delivery.delivery_service import DeliveryPolicy, DeliveryService
from broker.errors import FlushDiskTimeout
from broker.send_service import SendService, TopicPolicy, TopicService
from broker.store.message_store import MessageStore, StoreConfig

from .metrics import BrokerMetrics, create_metrics


@dataclass
class BrokerRuntime:
    settings: BrokerSettings
    store: MessageStore
    topics: TopicService
    sender: SendService
    delivery: DeliveryService
    metrics: BrokerMetrics
    started_at: float

    @classmethod
    def open(cls, settings: BrokerSettings) -> "BrokerRuntime":
        """Lock the data dir and recover the store (raises DataDirLocked / CorruptLogError)."""
        store = MessageStore(StoreConfig(
            data_dir=settings.data_dir,
            segment_bytes=settings.segment_bytes,
            consume_queue_entries=settings.consume_queue_entries,
            flush_mode=settings.flush_mode,
            async_flush_interval=settings.async_flush_interval,
            checkpoint_interval=settings.offset_flush_interval,
        ))
        topics = TopicService(store, TopicPolicy(settings.auto_create_topics, settings.default_queues, settings.max_message_size))
        delivery = DeliveryService(store, DeliveryPolicy(settings.max_reconsume_times, tuple(settings.retry_delays)))
        runtime = cls(settings, store, topics, SendService(store, topics), delivery, None, time.time())  # type: ignore[arg-type]
        runtime.metrics = create_metrics(runtime.state_snapshot)
        return runtime

    def state_snapshot(self) -> dict:
        return {
            "lag": self.delivery.total_lag(),
            "end": self.store.commit_log.end_offset,
            "flushed": self.store.flushed_offset,
            "fsyncs": self.store.flush_count,
            "dlq": self.delivery.dlq_moves,
        }

    async def durable(self, end_offset: int) -> None:
        """Wait until ``end_offset`` is fsynced (sync mode); FlushDiskTimeout past the deadline."""
        future: Future[int] | None = self.store.wait_flushed(end_offset)
        if future is None or future.done() and future.exception() is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(future)), self.settings.sync_flush_timeout)
        except TimeoutError:
            raise FlushDiskTimeout(f"fsync did not complete within {self.settings.sync_flush_timeout}s") from None

    def close(self) -> None:
        self.store.close()
