"""Which peer figures each halfmq case is compared with on docs/benchmarks.md (the same workload shape).

A table, kept apart from the renderer (report.py) so adding a peer is a one-line data change.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PeerRef:
    label: str
    file: str
    keys: tuple[str, ...]


# halfmq case -> the peer figures it is compared with (same workload shape, 256-byte messages)
COMPARISONS: list[tuple[str, str, str, list[PeerRef]]] = [
    ("durable send, 1 in flight", "send", "single_seq", [
        PeerRef("RabbitMQ 3 classic, publisher confirms", "rabbitmq_classic", ("confirm_seq",)),
        PeerRef("NATS JetStream 2.15, sync always", "nats_2_15_syncalways", ("publish_seq",)),
        PeerRef("Redis 7 XADD, appendfsync always", "redis_always", ("xadd_seq",)),
        PeerRef("FastAPI inline fsync (wrk -c1)", "http_append_fsync", ("wrk_t1_c1",)),
        PeerRef("raw append + fsync per record", "fsync", ("fsync_each",)),
    ]),
    ("durable send, 64 in flight", "send", "single_c64", [
        PeerRef("RabbitMQ 3 classic, publisher confirms", "rabbitmq_classic", ("confirm_c64",)),
        PeerRef("NATS JetStream 2.15, sync always", "nats_2_15_syncalways", ("publish_c64",)),
        PeerRef("Redis 7 XADD, appendfsync always", "redis_always", ("xadd_c64",)),
        PeerRef("FastAPI inline fsync (wrk -c64)", "http_append_fsync", ("wrk_t1_c64",)),
        PeerRef("trivial FastAPI, 1 worker (wrk -c64)", "http", ("workers1", "wrk_t1_c64")),
        PeerRef("trivial FastAPI, 1 worker (aiohttp, 64)", "http", ("workers1", "aiohttp_c64")),
    ]),
    ("durable batched send (100/request), 64 in flight, msg/s", "send", "batch100_c64", [
        PeerRef("raw append, fsync per 64 records", "fsync", ("fsync_group64",)),
        PeerRef("RabbitMQ 3 classic, publisher confirms, 64 in flight", "rabbitmq_classic", ("confirm_c64",)),
    ]),
    ("SDK AsyncProducer.send, 64 callers, durable", "send", "sdk_single_c64", [
        PeerRef("Redis 7 XADD, appendfsync always (redis-py asyncio, 64 in flight)", "redis_always", ("xadd_c64",)),
        PeerRef("NATS JetStream 2.15, sync always (nats-py, 64 in flight)", "nats_2_15_syncalways", ("publish_c64",)),
        PeerRef("RabbitMQ 3 classic, publisher confirms (aio-pika, 64 in flight)", "rabbitmq_classic", ("confirm_c64",)),
        PeerRef("one httpx.AsyncClient, 64 in flight, trivial FastAPI", "http", ("workers1", "httpx_c64_pool64")),
        PeerRef("aiohttp, 64 in flight, trivial FastAPI", "http", ("workers1", "aiohttp_c64")),
    ]),
    ("transaction (half + commit), 1 in flight", "tx", "pairs_seq", [
        PeerRef("RabbitMQ AMQP tx, 1 channel", "rabbitmq_classic", ("tx_seq",)),
        PeerRef("PostgreSQL outbox txn, 1 client", "outbox", ("pg_sync_commit_on_c1",)),
        PeerRef("SQLite WAL FULL outbox txn", "outbox", ("sqlite_wal_sync_full",)),
    ]),
    ("transaction (half + commit), 64 in flight", "tx", "pairs_c64", [
        PeerRef("RabbitMQ AMQP tx, 64 channels", "rabbitmq_classic", ("tx_c64",)),
        PeerRef("PostgreSQL outbox txn, 32 clients", "outbox", ("pg_sync_commit_on_c32",)),
    ]),
    ("SDK AsyncTransactionProducer.send_in_transaction, 64 callers", "tx", "sdk_tx_c64", [
        PeerRef("RabbitMQ AMQP tx, 64 channels (aio-pika)", "rabbitmq_classic", ("tx_c64",)),
        PeerRef("PostgreSQL outbox txn, 32 clients (asyncpg)", "outbox", ("pg_sync_commit_on_c32",)),
    ]),
    ("transaction (half + commit), 64 in flight, Python (aiohttp) client", "tx", "pairs_c64_aiohttp", [
        PeerRef("RabbitMQ AMQP tx, 64 channels (aio-pika client)", "rabbitmq_classic", ("tx_c64",)),
    ]),
    ("consume + ack, one consumer, msg/s", "consume", "one_consumer", [
        PeerRef("RabbitMQ consume, prefetch 256, ack each", "rabbitmq_classic", ("consume",)),
        PeerRef("Redis XREADGROUP 256 + XACK", "redis_always", ("consume_group",)),
        PeerRef("NATS JetStream pull 256 + ack", "nats_2_15_syncalways", ("consume_pull_ack",)),
    ]),
    ("SDK AsyncConsumer (receive + handler + ack), one process, msg/s", "consume", "sdk_consumer", [
        PeerRef("NATS JetStream pull 256 + ack (nats-py)", "nats_2_15_syncalways", ("consume_pull_ack",)),
        PeerRef("Redis XREADGROUP 256 + XACK (redis-py asyncio)", "redis_always", ("consume_group",)),
        PeerRef("RabbitMQ consume, prefetch 256, ack each (aio-pika)", "rabbitmq_classic", ("consume",)),
    ]),
    ("consume + ack, four consumers, msg/s", "consume", "four_consumers", [
        PeerRef("RabbitMQ consume, prefetch 256, ack each", "rabbitmq_classic", ("consume",)),
    ]),
    ("orders credited end to end, 64 in flight", "orders", "orders_c64", [
        PeerRef("PostgreSQL outbox txn alone, 32 clients", "outbox", ("pg_sync_commit_on_c32",)),
        PeerRef("SQLite WAL FULL outbox txn alone", "outbox", ("sqlite_wal_sync_full",)),
    ]),
    ("orders credited end to end on PostgreSQL, 64 in flight", "orders", "orders_c64_pg", [
        PeerRef("PostgreSQL outbox txn alone, 32 clients", "outbox", ("pg_sync_commit_on_c32",)),
    ]),
    ("quorum send on a 3-node set (ack=quorum), 64 in flight", "replicated", "quorum_c64", [
        PeerRef("NATS JetStream R3 cluster of 3, sync always (nats-py, 64 in flight)", "nats_jetstream_r3", ("publish_c64",)),
    ]),
    ("Spark job, wall time (s)", "spark", "aggregate", [
        PeerRef("Spark local[2]: start → first action", "spark", ("startup_to_first_action_s",)),
        PeerRef("Spark local[2]: 1M-row groupBy from Parquet", "spark", ("agg_from_parquet_s",)),
    ]),
]
