"""Everything one broker process runs, built from settings in one place."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from halfmq.broker.config import BrokerSettings
from halfmq.broker.delivery.delivery_service import DeliveryPolicy, DeliveryService
from halfmq.broker.delivery.event_counts import EventCounts
from halfmq.broker.delivery.receipt_handle import load_or_create_key
from halfmq.broker.half_messages.check_client import CheckClient
from halfmq.broker.half_messages.check_policy import CheckPolicy
from halfmq.broker.half_messages.check_service import CheckService
from halfmq.broker.half_messages.check_url import OwnAddress
from halfmq.broker.half_messages.half_message_service import HalfMessageService
from halfmq.broker.half_messages.producer_registry import ProducerRegistry
from halfmq.broker.idempotence.principal_caps import PrincipalCaps
from halfmq.broker.idempotence.producer_ids import ProducerIds
from halfmq.broker.messages.rules import MessageLimits
from halfmq.broker.messages.send_service import SendService, TopicPolicy, TopicService
from halfmq.broker.observability.metrics import BrokerMetrics, create_metrics
from halfmq.broker.observability.operator_metrics import OperatorMetrics, RowLimits
from halfmq.broker.producer_transactions import snapshot_state
from halfmq.broker.producer_transactions.coordinator import TransactionCoordinator, TxnLimits
from halfmq.broker.security.access import Access
from halfmq.broker.security.auth_file import Authenticator, AuthFileError
from halfmq.broker.store import state_snapshot
from halfmq.broker.store.disk_watermarks import DiskLevel, DiskWatch, DiskWatermarks, filesystem_usage
from halfmq.broker.store.failure_watch import FailureWatch
from halfmq.broker.store.flush_waiter import FlushWaiter
from halfmq.broker.store.message_store import MessageStore, StoreConfig
from halfmq.broker.store.retention import Pin, RetentionLimits
from halfmq.broker.store.retention_service import RetentionService
from halfmq.broker.store.topic_retention import TopicRetention
from halfmq.broker.store.topics import TXN_STATE_TOPIC
from halfmq.broker.timers.release_service import ReleaseService
from halfmq.broker.timers.timer_index import TimerIndex
from halfmq.broker.usecases import UseCases

log = logging.getLogger(__name__)
Durable = Callable[[int], Awaitable[None]]
DurableWrapper = Callable[[Durable], Durable]  # a broker set's leader: the local fsync, then the replicas


@dataclass
class BrokerRuntime:
    settings: BrokerSettings
    store: MessageStore
    topics: TopicService
    sender: SendService
    delivery: DeliveryService
    half_messages: HalfMessageService
    producers: ProducerRegistry
    metrics: BrokerMetrics
    durable: Callable[[int], Awaitable[None]]
    started_at: float
    producer_txns: TransactionCoordinator = field(default=None)  # type: ignore[assignment]  # set by open()
    producer_ids: ProducerIds = field(default=None)  # type: ignore[assignment]  # set by open(): the coordinator's
    checks: CheckService | None = None
    timers: TimerIndex = field(default=None)  # type: ignore[assignment]  # set by open(): every node follows the log
    operator_metrics: OperatorMetrics = field(default=None)  # type: ignore[assignment]  # set by open(): what /metrics answers
    access: Access = field(default_factory=lambda: Access(None))
    own_address: OwnAddress | None = None  # where check_urls must never point; set by open()
    # What an ack's answer waits for (usecases.settling): a set's leader, ``durable`` (as the ack mode says, as a send);
    # one broker, nothing past the write (a kill -9 keeps it; the fsync per ack would halve `halfmq bench consume`).
    settled_durable: Callable[[int], Awaitable[None]] | None = None
    # Lookups (journeys, searches: usecases/journeys.py) in threads at once: a flood of them leaves the default
    # executor's other users (the acks checkpoint, check URLs) their threads.
    lookups: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(2), repr=False)
    usecases: UseCases = field(default=None)  # type: ignore[assignment]  # set by open(): what every front calls
    _check_task: asyncio.Task | None = field(default=None, repr=False)
    _auth_task: asyncio.Task | None = field(default=None, repr=False)
    _txn_timeout_task: asyncio.Task | None = field(default=None, repr=False)
    _state_snapshot_task: asyncio.Task | None = field(default=None, repr=False)
    _release_task: asyncio.Task | None = field(default=None, repr=False)
    _retention_task: asyncio.Task | None = field(default=None, repr=False)
    retention: RetentionService | None = None  # set by start(): the one broker, a set's leader (followers follow its log start)
    # set by open(), which applies it once before anything is served: the topics' own limits as each queue's floor (every
    # node, from the same rule: decision 052, "Per-topic limits"); then each retention pass, or a follower's own loop
    topic_retention: TopicRetention = field(default=None)  # type: ignore[assignment]
    _floors_task: asyncio.Task | None = field(default=None, repr=False)
    disk: DiskWatch | None = None  # set by open(): the data dir's disk against its watermarks, read by start()'s loop
    _disk_task: asyncio.Task | None = field(default=None, repr=False)

    @classmethod
    def open(cls, settings: BrokerSettings,
             durable_wrapper: DurableWrapper | None = None,
             store: MessageStore | None = None) -> BrokerRuntime:
        """Lock the data dir, recover the store and rebuild indexes (DataDirLocked / CorruptLogError).

        ``durable_wrapper`` (a broker set's leader) adds waiting for replicas to the local fsync. ``store``: one
        already open (a broker set's follower that becomes leader keeps it): no recovery, and every service above
        it is built again from what it holds (the half index, the coordinator's replay, the delivery state).
        """
        if store is not None:
            store.serve_anew()
            return cls._build(settings, store, durable_wrapper, close_on_failure=False)
        return cls._build(settings, MessageStore(StoreConfig(
            data_dir=settings.data_dir,
            segment_bytes=settings.segment_bytes,
            consume_queue_entries=settings.consume_queue_entries,
            open_files=settings.open_files,
            index_filter_bits=settings.index_filter_bits,
            flush_mode=settings.flush_mode,
            async_flush_interval=settings.async_flush_interval,
            checkpoint_interval=settings.offset_flush_interval,
        )), durable_wrapper, close_on_failure=True)

    @classmethod
    def _build(cls, settings: BrokerSettings, store: MessageStore,
               durable_wrapper: DurableWrapper | None,
               close_on_failure: bool) -> BrokerRuntime:
        store.log_topics()  # a set's followers have every topic, empty or not (store.state_records)
        if settings.cluster:  # a set's node shows readers nothing until it leads, or its leader's high watermark says
            store.visible.limit(0)  # (cluster/high_watermark.py on a leader, cluster/follower.py on a follower)
        try:
            timers = TimerIndex(store, run_age=settings.timer_run_age)  # before anything is written: it follows the log
            topics = TopicService(store, TopicPolicy(settings.auto_create_topics, settings.default_queues, MessageLimits(
                settings.max_message_size, settings.max_keys_per_message, settings.max_properties_bytes)))
            delivery = DeliveryService(store, DeliveryPolicy(settings.max_reconsume_times, tuple(settings.retry_delays),
                                                              settings.fifo_window, settings.journal, settings.max_consumer_groups),
                                       key=load_or_create_key(settings.data_dir / "receipt-key.json"))
            delivery.counted = EventCounts(settings.metrics_max_group_topics)  # before any replay counts an ack
            durable: Callable[[int], Awaitable[None]] = FlushWaiter(store, settings.sync_flush_timeout)
            if durable_wrapper is not None:
                durable = durable_wrapper(durable)
            rt: BrokerRuntime  # bound below; the closures only run after that
            transactions = HalfMessageService(
                store, cls.check_policy(settings), durable, retention=settings.transaction_retention,
                on_finish=lambda seconds: rt.metrics.tx_finish_latency.observe(seconds),
            )
            producers = ProducerRegistry(settings.data_dir / "producers.json", settings.producer_expiry)
            disk = DiskWatch(filesystem_usage(settings.data_dir),
                             DiskWatermarks(settings.disk_early_delete_ratio, settings.disk_refuse_sends_ratio,
                                            settings.disk_resume_margin), settings.disk_check_interval)
            sender = SendService(store, topics, timer_max_delay_ms=int(settings.timer_max_delay * 1000), disk=disk)
            rt = cls(settings, store, topics, sender, delivery, transactions, producers, create_metrics(), durable, time.time(),
                     timers=timers, disk=disk)
            authenticator = Authenticator.from_file(settings.auth_file) if settings.auth_file else None
            decisions = {r: rt.metrics.auth_decisions.labels(r) for r in ("allow", "deny", "unauthenticated")}
            rt.access = Access(authenticator, lambda result: decisions[result].inc())
            rt.producer_txns = TransactionCoordinator(
                store, delivery, durable, limits=TxnLimits(settings.producer_txn_max_messages, settings.producer_txn_max_bytes, settings.producer_txn_max_acks,
                                               settings.producer_txn_max_open_bytes, settings.producer_txn_max_open_bytes_per_principal),
                send_window=settings.idempotent_send_window, producer_id_expiry_ms=int(settings.producer_id_expiration * 1000),
                producers=producers, producer_caps=cls.producer_caps(settings),
                transactional_id_expiry_ms=int(settings.transactional_id_expiration * 1000))
            rt.producer_ids = rt.producer_txns.ids
            rt.own_address = OwnAddress.of(settings.host, settings.port)
            rt.settled_durable = durable if durable_wrapper is not None else None
            # the floors the topics' own limits set are in memory: set them again before the first request can read
            # below them (a restart, a promotion), from the rule every node applies (decision 052, "Per-topic limits")
            rt.topic_retention = TopicRetention(store, int(settings.retention * 1000))
            rt.topic_retention.apply(int(time.time() * 1000))
            rt.operator_metrics = OperatorMetrics(rt, RowLimits(settings.metrics_max_topics, settings.metrics_max_group_topics))
            from .use_cases import use_cases  # the wiring of every use case: the root's other half

            rt.usecases = use_cases(rt)
            return rt
        except BaseException:
            if close_on_failure:
                store.close()
            raise

    @staticmethod
    def producer_caps(settings: BrokerSettings) -> PrincipalCaps:
        return PrincipalCaps(settings.idempotent_producer_ids_per_principal, settings.idempotent_sequences_per_principal,
                             int(settings.producer_id_evictable_after * 1000))

    @staticmethod
    def check_policy(settings: BrokerSettings) -> CheckPolicy:
        return CheckPolicy(settings.transaction_timeout, settings.transaction_check_interval, settings.transaction_check_max)

    async def start(self) -> None:
        """Serve as the one broker, or as a set's leader: what only the writer does starts here."""
        self.producers.log_to(self.store)  # registrations and expiries go in the log from here (never a follower's)
        self.checks = CheckService(
            self.half_messages, self.producers,
            CheckClient(read_timeout=self.settings.check_timeout, secret_for=self.access.check_secret,
                        ca_file=str(self.settings.check_ca_file) if self.settings.check_ca_file else None),
            self.check_policy(self.settings), concurrency=self.settings.check_concurrency,
        )
        self._check_task = asyncio.get_running_loop().create_task(self.checks.run_forever())
        self._txn_timeout_task = asyncio.get_running_loop().create_task(self._abort_expired_transactions())
        self._state_snapshot_task = asyncio.get_running_loop().create_task(self._keep_state_snapshot())
        releases = ReleaseService(self.store, self.timers, self.durable, on_released=self.metrics.timer_lateness.observe)
        self._release_task = asyncio.get_running_loop().create_task(releases.run_forever())
        # the one broker, or a set's leader: its followers delete below its log start, which every run of their stream carries (cluster/catch_up.py)
        self.retention = RetentionService(self.store, RetentionLimits(int(self.settings.retention * 1000), self.settings.retention_bytes),
                                          self.retention_pins(), reclaim=self._disk_reclaim_bytes, topics=self.topic_retention)
        self._retention_task = asyncio.get_running_loop().create_task(self._keep_retention(self.retention))
        if self.disk is not None:
            try:
                self.disk.read()  # once before the first request: a broker started on a full disk refuses its first send
            except OSError as unread:
                log.error("cannot read the data dir's disk usage: %s", unread)
            self._disk_task = asyncio.get_running_loop().create_task(self._watch_disk(self.disk))
        self.watch_auth()

    def watch_auth(self) -> None:
        """Follow the auth file: on every node that answers requests, a set's followers too (they serve reads)."""
        if self.settings.auth_file is not None and self._auth_task is None:
            self._auth_task = asyncio.get_running_loop().create_task(self._watch_auth_file(self.settings.auth_file))

    async def _watch_auth_file(self, path: Path, every: float = 2.0) -> None:
        """Re-read the auth file when it changes (`halfmq admin tokens create|revoke`); a broken edit keeps the old one."""
        seen = path.stat().st_mtime_ns  # noqa: ASYNC240 - one small file's stat every 2 s
        while True:
            await asyncio.sleep(every)
            try:
                changed = path.stat().st_mtime_ns  # noqa: ASYNC240
                if changed == seen:
                    continue
                seen = changed
                self.access.use(Authenticator.from_file(path))
                log.info("auth file %s re-read", path)
            except (OSError, AuthFileError) as exc:
                log.error("%s; keeping the one loaded before", exc)

    async def _abort_expired_transactions(self) -> None:
        """The producer-transaction timeout's loop: only sleeps and writes; what expires is a pure decision."""
        while True:
            await asyncio.sleep(self.settings.producer_txn_timeout_scan_interval)
            try:
                self.producer_txns.abort_expired()
                self.producer_ids.expire_idle_producers()
                self.producer_txns.expire_idle_transactional_ids()
            except Exception:  # a refusing disk: the store logs it; the next pass tries again
                log.exception("aborting expired producer transactions failed")

    async def _keep_state_snapshot(self) -> None:
        """Take a state snapshot between two requests, at most every ``state_snapshot_interval`` while the state queue
        grows, and write it once the log it counts is acknowledged (on a set's leader: under the high watermark), so the
        next replay reads only the records after it (store.state_snapshot)."""
        path, pending, taken, taken_at = state_snapshot.path_of(self.store), None, 0, -self.settings.state_snapshot_interval
        writes = FailureWatch("cannot write the state snapshot: %s; retried every interval (a restart replays more)",
                              "the state snapshot is written again", log)
        while True:
            await asyncio.sleep(self.settings.offset_flush_interval)
            try:
                bound = self.store.visible.bound
                acknowledged = self.store.acknowledged_end if bound is None else min(bound, self.store.acknowledged_end)
                if pending is not None and pending.due(acknowledged):
                    await asyncio.to_thread(self._save_state_snapshot, path, pending)
                    writes.succeeded()
                    pending = None
                elif pending is not None and bound is None:
                    self.store.wait_flushed(pending.log_end)  # one broker: ask its disk (an ack's answer waits for none)
                now = time.monotonic()
                if (pending is None and now - taken_at >= self.settings.state_snapshot_interval
                        and self.store.reads.queue_range(TXN_STATE_TOPIC, 0)[1] > taken):
                    pending = state_snapshot.take(self.store, self.delivery.settled(),
                                                  snapshot_state.state_of(self.producer_txns, self.delivery))
                    taken, taken_at = pending.entries, now
            except OSError as refused:  # a full disk: said once, not a traceback a second; the next pass tries again
                writes.failed(refused)
            except Exception:
                log.exception("writing the state snapshot failed")

    def _save_state_snapshot(self, path: Path, snapshot: state_snapshot.StateSnapshot) -> None:
        """Write the consumer offsets first, then the snapshot: the group deletions before it are in the offsets file
        (the snapshot's replay reads no ``group-deleted`` record before its entry)."""
        self.store.checkpoint()
        state_snapshot.save(path, snapshot)

    def replay_start_offset(self) -> int:
        """The commit-log offset from which a restart needs the log (state records below it are compactable): where the
        oldest usable state snapshot's last counted entry starts; 0 without one (store.state_snapshot)."""
        return state_snapshot.replay_start_offset(self.store)

    def follow_topic_floors(self) -> None:
        """A set's follower: move the topics' queue floors as their own limits say, every ``retention_check_interval``
        (the leader's passes do it there), so the reads a follower serves hide what the leader hides."""
        if self._floors_task is None:
            self._floors_task = asyncio.get_running_loop().create_task(self._keep_topic_floors())

    async def _keep_topic_floors(self) -> None:
        while True:
            await asyncio.sleep(self.settings.retention_check_interval)
            try:
                await asyncio.to_thread(self.topic_retention.apply, int(time.time() * 1000))
            except Exception:
                log.exception("the topics' retention floors could not be set; the next pass tries again")

    def retention_pins(self) -> dict[str, Pin]:
        """What retention must never take (docs/decisions/052-retention-by-whole-segments-and-pins.md), each as the
        lowest commit-log offset it still needs. ``state_records``: everything a restart replays, from the oldest usable
        state snapshot's position on (``replay_start_offset``; 0, the whole log, without one)."""
        return {
            "open_halves": self.half_messages.lowest_needed_offset,
            "open_producer_transactions": self.producer_txns.lowest_needed_offset,
            "pending_timers": self.timers.lowest_needed_offset,
            "state_records": self.replay_start_offset,
        }

    async def _keep_retention(self, retention: RetentionService) -> None:
        """Retention's loop: only sleeps, reads the pins (on this loop, where the services change them) and deletes
        (on a thread); what goes is retention.new_log_start's decision."""
        while True:
            await asyncio.sleep(self.settings.retention_check_interval)
            await self._retention_pass(retention)

    async def _retention_pass(self, retention: RetentionService) -> None:
        try:
            held = retention.held()
            await asyncio.to_thread(retention.apply, held)
        except OSError as refused:
            log.error("retention could not delete files: %s; the next pass tries again", refused)
        except Exception:
            log.exception("retention failed; the next pass tries again")

    def _disk_reclaim_bytes(self) -> int:
        return self.disk.reclaim_bytes if self.disk is not None else 0

    async def _watch_disk(self, disk: DiskWatch) -> None:
        """The disk watermarks' loop (docs/decisions/053-disk-watermarks.md): only reads the filesystem (on a thread)
        every ``disk_check_interval``; past the early-delete mark it runs a retention pass at once (the pass frees what
        ``reclaim_bytes`` asks and no pin holds). Sends read the level it leaves (SendService.refuse_if_disk_full)."""
        readings = FailureWatch("cannot read the data dir's disk usage: %s; the watermarks keep the last reading",
                                "the data dir's disk usage is read again", log)
        while True:
            try:
                level = await asyncio.to_thread(disk.read)
                readings.succeeded()
                if level >= DiskLevel.EARLY_DELETE and self.retention is not None:
                    await self._retention_pass(self.retention)
            except OSError as failed:
                readings.failed(failed)
            except Exception:
                log.exception("reading the disk's watermarks failed; the next pass tries again")
            await asyncio.sleep(self.settings.disk_check_interval)

    async def stop(self, close_store: bool = True) -> None:
        """Stop what ``start`` started; ``close_store=False`` leaves the store open for the next runtime (a role change)."""
        for task in (self._release_task, self._txn_timeout_task, self._state_snapshot_task, self._retention_task, self._disk_task,
                     self._floors_task):
            if task is not None:
                task.cancel()
        if self._auth_task is not None:
            self._auth_task.cancel()
        if getattr(self, "usecases", None) is not None:
            self.usecases.groups.stop_every_redrive()  # a role change or shutdown: this node's redrives end here
        if self._check_task is not None:
            self._check_task.cancel()
            await asyncio.gather(self._check_task, return_exceptions=True)
        if self.checks is not None:
            await self.checks.drain()
        if close_store:
            self.store.close()
        else:
            self.delivery.close()  # its long polls end now: the next runtime's delivery serves the consumers
