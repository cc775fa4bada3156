"""Broker settings: every one has a default that works on a laptop."""

from __future__ import annotations

import os
import ssl
import urllib.parse
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from halfmq.human_time import parse_duration
from halfmq.tracing import TRACES_ENV, Exporter

# RocketMQ's messageDelayLevel from 1s..2h, minus the sub-10s levels it does not use for retries.
ROCKETMQ_RETRY_DELAYS = (10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200)


def default_max_request_bytes(max_message_size: int) -> int:
    """32 MiB, or 8 x max_message_size if that is more: a message of the largest size always fits,
    even as base64 (x4/3) or as text JSON-escaped at worst (x6), and a batch may carry up to 32 MiB."""
    return max(32 * 1024 * 1024, 8 * max_message_size)


DEFAULT_PORT = 10911
DEFAULT_GRPC_PORT = 8081  # RocketMQ 5 proxy's
_GRPC_OFFSET = DEFAULT_PORT - DEFAULT_GRPC_PORT


def default_kafka_port(http_port: int) -> int:
    """The Kafka front's port `halfmq up` gives a broker on ``http_port``: 9092 (Kafka's own) for the default 10911."""
    return http_port - (DEFAULT_PORT - 9092)


def default_grpc_port(http_port: int) -> int:
    """The RocketMQ gRPC front's port when none is set, derived from the HTTP port (design section 14).

    8081 beside the default 10911, and otherwise as far from 8081 as the HTTP port is from 10911
    (10912 -> 8082, 20000 -> 17170), so brokers on different HTTP ports from 3854 up (a second broker, the
    nodes of `halfmq up --replicas`) never contend for one gRPC port. Where that would fall below 1024 the
    offset is added instead (3000 -> 5830). An ephemeral HTTP port (0) has nothing to derive from: the front is off.
    """
    if http_port == 0:
        return 0
    below = http_port - _GRPC_OFFSET
    return below if below >= 1024 else http_port + _GRPC_OFFSET


def parse_kafka_address(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6]:PORT`` for an IPv6 literal) as Kafka clients are sent to it; a clear ValueError otherwise.

    Refuses the wildcard addresses as Kafka's ``advertised.listeners`` does: a client told 0.0.0.0 reaches nothing.
    """
    host, sep, port = value.strip().rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535 or any(c in host for c in " /[]"):
        raise ValueError(f"kafka_advertise {value!r} is not HOST:PORT (a port from 1 to 65535; [ADDR]:PORT for IPv6)")
    if host in ("0.0.0.0", "::"):
        raise ValueError(f"kafka_advertise {value!r} names the wildcard address: give the host clients connect to")
    return host, int(port)


def _split_csv(value: object) -> object:
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


def verified_tls(ca_file: str | os.PathLike[str] | None) -> ssl.SSLContext | bool:
    """How the broker verifies an https URL it calls (a check_url, a set's member): against ``ca_file`` alone when
    given (a private CA), else the system's CAs (aiohttp's ``True``). Always verified, host name included: no setting
    turns it off. A file that does not load raises here (OSError, ssl.SSLError), so a wrong path stops the start."""
    return ssl.create_default_context(cafile=ca_file) if ca_file is not None else True


class BrokerSettings(BaseSettings):
    # allow_inf_nan: "inf" seconds would put a transaction's next check at infinity and fail every view of it
    model_config = SettingsConfigDict(env_prefix="HALFMQ_BROKER_", extra="ignore", allow_inf_nan=False)

    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    # the RocketMQ 5 front (design section 14); 0 turns it off; unset, derived from `port` (default_grpc_port)
    grpc_port: int | None = Field(default=None, ge=0, le=65535)
    # Kafka's wire protocol on the same store (DESIGN section 19); 0 (the default) turns it off. With auth on, Kafka's
    # clients authenticate with SASL/PLAIN (a principal's name and token). In a broker set, the leader's.
    kafka_port: int = Field(default=0, ge=0, le=65535)
    # HOST:PORT the Kafka front's Metadata and FindCoordinator send clients to (Kafka's advertised.listeners), when it is
    # not the bind address: a published container port, a NAT. Unset: advertise_url's host (else `host`) and kafka_port.
    # In a set each node names its own; clients are sent to the leader's.
    kafka_advertise: str = ""
    # Kafka consumer groups' members live in the front's memory (their offsets in the log): how many groups and members
    # per group it holds; a join past either is refused GROUP_MAX_SIZE_REACHED.
    kafka_max_groups: int = Field(default=10_000, ge=1)
    kafka_max_group_members: int = Field(default=1_000, ge=1)
    # Idempotent Kafka producers whose last batches the front remembers (least recently used forgotten first)
    kafka_max_producers: int = Field(default=10_000, ge=1)
    # What may wait unread on one telemetry stream (settings replies, checks); past it the stream ends with
    # RESOURCE_EXHAUSTED (docs/decisions/041-telemetry-stream-backpressure.md).
    grpc_telemetry_outbox_commands: int = Field(default=1024, ge=1)
    grpc_telemetry_outbox_bytes: int = Field(default=16 * 1024 * 1024, ge=1024)
    # What may wait unread on all telemetry streams together (past it the stream holding the most ends), and how many
    # streams one principal, and one client id of it, may hold open (past it a new one is refused, RESOURCE_EXHAUSTED).
    grpc_telemetry_unread_bytes: int = Field(default=64 * 1024 * 1024, ge=1024)
    grpc_telemetry_streams_per_principal: int = Field(default=128, ge=1)
    grpc_telemetry_streams_per_client: int = Field(default=8, ge=1)
    data_dir: Path = Path("./data/broker")
    flush_mode: Literal["sync", "async"] = "sync"
    sync_flush_timeout: float = 5.0
    async_flush_interval: float = 0.2
    segment_bytes: int = Field(default=1 << 30, ge=4096)
    consume_queue_entries: int = Field(default=300_000, ge=16)
    # Descriptors the store keeps open for reading its files (commit-log segments, queue and key-index files), the least
    # recently used closed past it; only the files being written hold one more each (broker/store/file_handles.py).
    open_files: int = Field(default=256, ge=4)
    # Bits a key of each key-index file's in-memory filter (a lookup skips a file that cannot hold the key without
    # opening it): memory is bits/8 bytes per indexed key (1 byte by default, ~5 % of files walked for nothing); 0: none.
    index_filter_bits: int = Field(default=8, ge=0, le=64)
    max_message_size: int = Field(default=4 * 1024 * 1024, ge=1)  # bytes: the body and the properties, UTF-8
    # What one message's keys and properties may hold (bytes, counted before any work grows with them: each key is a
    # key-index entry written under the store's write lock). RocketMQ stores properties behind a 16-bit length.
    max_keys_per_message: int = Field(default=64, ge=1, le=65_536)
    max_properties_bytes: int = Field(default=32 * 1024, ge=256)
    auto_create_topics: bool = True
    default_queues: int = Field(default=4, ge=1, le=64)
    offset_flush_interval: float = 1.0
    # Bulk DLQ redrives (POST /v1/consumer-groups/{g}/dlq/redrive): the pace when the request names none, the most a
    # request may ask, and how many jobs are kept at once (running ones refuse more: 429 TOO_MANY_DLQ_REDRIVES).
    dlq_redrive_rate: float = Field(default=100.0, gt=0)
    dlq_redrive_max_rate: float = Field(default=10_000.0, gt=0)
    dlq_redrive_jobs: int = Field(default=16, ge=1)
    transaction_timeout: float = 6.0
    transaction_check_interval: float = 5.0
    transaction_check_max: int = 15
    producer_expiry: float = 120.0
    transaction_retention: float = 900.0
    # Producer transactions (DESIGN section 11): what one commit may hold, and how often timeouts are looked for.
    producer_txn_max_messages: int = Field(default=10_000, ge=1)
    producer_txn_max_bytes: int = Field(default=16 * 1024 * 1024, ge=1024)
    producer_txn_max_acks: int = Field(default=10_000, ge=1)
    # What every open transaction together (and those one principal fed) may hold in memory until it ends: past it
    # 429 OPEN_TRANSACTIONS_FULL (why these values: docs/decisions/040-bytes-held-by-open-producer-transactions.md).
    producer_txn_max_open_bytes: int = Field(default=256 * 1024 * 1024, ge=1024)
    producer_txn_max_open_bytes_per_principal: int = Field(default=64 * 1024 * 1024, ge=1024)
    producer_txn_timeout_scan_interval: float = Field(default=0.5, gt=0)
    # Idempotent sends: how many numbers past the contiguous ones a producer may have outstanding (the SDK keeps 64 in
    # flight), and how long a producer id without a transactional id lives idle (Kafka's producer.id.expiration.ms).
    idempotent_send_window: int = Field(default=1024, ge=1, le=65_536)
    producer_id_expiration: float = Field(default=24 * 3600.0, gt=0)
    # How long a transactional id with no transaction open lives idle (Kafka's transactional.id.expiration.ms): then it
    # is forgotten for good (in no later state snapshot), and an init naming it again starts at a new producer id.
    transactional_id_expiration: float = Field(default=7 * 24 * 3600.0, gt=0)
    # How often at most the state snapshot (broker/store/state_snapshot.py) is taken while HALFMQ_TXN_STATE grows: a
    # restart reads the snapshot plus the records written since it, so this bounds what a restart reads.
    state_snapshot_interval: float = Field(default=10.0, gt=0)
    # What one principal's idempotent producers may hold in memory (broker/idempotence/principal_caps.py): live producer
    # ids obtained alone (the SDK takes one per Producer), and numbers remembered across all its producers' windows
    # (about 200 bytes each). Past a cap its least recently used id idle at least producer_id_evictable_after seconds is
    # forgotten, or the request gets 429 TOO_MANY_PRODUCER_IDS / SEND_WINDOWS_FULL.
    idempotent_producer_ids_per_principal: int = Field(default=64, ge=1)
    idempotent_sequences_per_principal: int = Field(default=131_072, ge=1)
    producer_id_evictable_after: float = Field(default=300.0, ge=0)
    check_timeout: float = 3.0
    check_concurrency: int = 16
    # scheme://host:port (or :* for any port); loopback for `halfmq up` and tests, the compose order service.
    check_url_allow: Annotated[list[str], NoDecode] = [
        "http://127.0.0.1:*", "https://127.0.0.1:*", "http://localhost:*", "https://localhost:*",
        "http://[::1]:*", "https://[::1]:*", "http://order:8001", "https://order:8001",
    ]
    max_reconsume_times: int = Field(default=16, ge=0)
    max_consumer_groups: int = Field(default=10_000, ge=1)  # receives that would begin one more: 429 TOO_MANY_CONSUMER_GROUPS
    retry_delays: Annotated[list[float], NoDecode] = list(ROCKETMQ_RETRY_DELAYS)
    # FIFO message groups: how far past a queue's committed offset delivery reads while messages wait behind their
    # group's unsettled head (SQS scans 120,000); past it one stuck group stalls its queue (docs/decisions/046-message-groups-timers-journeys.md).
    fifo_window: int = Field(default=20_000, ge=1)
    # Timed messages: how far ahead a deliver_at or a delay may reach (RocketMQ's timerMaxDelaySec), seconds.
    timer_max_delay: float = Field(default=3 * 24 * 3600.0, gt=0)
    timer_run_age: float = Field(default=60.0, gt=0)  # buffered timers go to a sorted run on disk at least this often
    # Where is my message: each receive's deliveries and each nack (its reason) as a journal record, each ack indexed by
    # the message's place (broker/delivery/journal.py). Off: journeys show only what the log says anyway (sent, the
    # transaction, timers, dead letters) and "acked" from the groups' committed offsets.
    journal: bool = True
    # Operator views (docs/metrics.md, docs/operating.md): the topics and the (consumer group, topic) pairs one /metrics
    # scrape shows rows of their own for (the rest summed under "(other)"), and the rows one console page shows.
    metrics_max_topics: int = Field(default=100, ge=1)
    metrics_max_group_topics: int = Field(default=100, ge=1)
    console_page_rows: int = Field(default=50, ge=1, le=1000)
    # What one lookup (a journey, a search by key) may read, in a thread: the topics it searches when the caller names
    # none (past it, 400 TOPIC_REQUIRED: name the topic), and the newest key-index files it walks in each topic (a file
    # indexes ~4M keys; older messages are not found; a file whose filter rules the key out is not walked nor counted).
    # A (topic, file) probe costs ~20 us: 12,800 at most by default.
    # Why: docs/decisions/049-scoped-key-index.md.
    lookup_topics: int = Field(default=100, ge=1)
    lookup_index_files: int = Field(default=128, ge=1)
    # Retention (docs/decisions/052-retention-by-whole-segments-and-pins.md): whole commit-log segments go once last
    # written longer ago than ``retention`` (seconds, or "7d", "12h", "30s"), or once the segments after them hold
    # ``retention_bytes`` (unset: no size limit); never what an open transaction, a pending timer or a restart still
    # needs. Checked every ``retention_check_interval`` seconds.
    retention: float = Field(default=7 * 86400.0, gt=0)
    retention_bytes: int | None = Field(default=None, ge=1)
    retention_check_interval: float = Field(default=10.0, gt=0)
    # Disk watermarks (docs/decisions/053-disk-watermarks.md): the used share of the data dir's filesystem, read every
    # ``disk_check_interval`` seconds; a mark is passed once the share is above it (1: never). Above
    # ``disk_early_delete_ratio`` (RocketMQ's diskMaxUsedSpaceRatio) retention deletes the oldest segments no pin holds
    # before their time, until the disk is under it again; above ``disk_refuse_sends_ratio`` sends are refused (503
    # DISK_ALMOST_FULL, Retry-After) while receives, acks and transaction ends go on; under it again, sends resume.
    disk_early_delete_ratio: float = Field(default=0.75, gt=0, le=1)
    disk_refuse_sends_ratio: float = Field(default=0.90, gt=0, le=1)
    disk_check_interval: float = Field(default=1.0, gt=0, le=60)
    disk_resume_margin: float = Field(default=0.02, ge=0, lt=1)  # a level is left this far under its mark (hysteresis)
    log_level: str = "info"
    # Tracing (docs/tracing.md): OpenTelemetry's OTEL_TRACES_EXPORTER / OTEL_SDK_DISABLED, or this shortcut,
    # HALFMQ_TRACES=otlp|console|none, one variable for every halfmq process (it wins over OTEL_TRACES_EXPORTER); off when unset.
    # The broker's spans are its use cases': a health check, a scrape or an empty receive makes none.
    traces: Exporter | Literal[""] = Field(default="", validation_alias=TRACES_ENV)
    http_server: Literal["uvicorn", "granian"] = "uvicorn"  # why: broker/serving/server.py
    # HTTP limits, the same on both servers (why these values: docs/decisions/010-http-limits.md).
    max_request_bytes: int = Field(default=0, ge=0)  # 0: see default_max_request_bytes
    max_connections: int = Field(default=10_000, ge=16)
    listen_backlog: int = Field(default=2048, ge=128)
    request_head_timeout: float = Field(default=20.0, gt=0, le=600)
    request_body_timeout: float = Field(default=60.0, gt=0)
    max_request_head_bytes: int = Field(default=64 * 1024, ge=8192)
    # Security (docs/decisions/011-security.md): auth is on iff an auth file is given.
    auth_file: Path | None = None
    insecure: bool = False  # serve a non-loopback address without auth (protected mode off)
    # Names the broker answers to besides loopback, its bind address and advertise_url (DNS rebinding:
    # broker/serving/allowed_hosts.py); "*" for any. Bound to 0.0.0.0 with none listed, any Host is served.
    allowed_hosts: Annotated[list[str], NoDecode] = []
    tls_cert_file: Path | None = None
    tls_key_file: Path | None = None
    check_ca_file: Path | None = None  # CA bundle for https check_urls (default: the system's)
    # A replicated broker set (design section 12, docs/decisions/027-replicated-broker-set.md); without
    # `cluster` the broker is the single-node default and none of these is read.
    cluster: str | None = None  # etcd://HOST:PORT/PREFIX
    node_id: str = ""
    advertise_url: str = ""  # where the other nodes and clients reach this one (default http://host:port)
    cluster_size: int = Field(default=3, ge=1, le=9)
    lease_ttl: int = Field(default=2, ge=1, le=60)  # etcd raises it to its minimum (2 s by default); the fence counts what it granted
    ack: Literal["quorum", "leader"] = "quorum"
    replica_lag_time: float = Field(default=2.0, gt=0)
    # Removed: a follower always replicates over its stream (decision 054). Kept only so that HALFMQ_BROKER_REPLICATION=fetch,
    # set for the old long-polled fetch, refuses to start (exit 6) instead of being ignored; "stream" (or unset) is taken.
    replication: Literal["", "stream"] = Field(default="", exclude=True)
    # log bytes a leader pushes on a follower's stream past what the follower reported on disk before it waits for its ack
    replication_in_flight_bytes: int = Field(default=4 * 1024 * 1024, ge=256 * 1024)
    cluster_token_file: Path | None = None  # with auth on: the token (admin on cluster:broker) nodes fetch with
    # CA bundle (PEM) a node verifies the other members' https URLs with: calls and the replication stream. Unset: the
    # system's CAs. Verification is never turned off: a member whose certificate it does not trust is not followed.
    peer_ca_file: Path | None = None
    # NODE_ID=URL,...: every node of the set. A node follows only a leader listed here (id and URL) and sends its
    # cluster token to no other URL; it defaults advertise_url and cluster_size. Required with `cluster`.
    cluster_members: Annotated[list[str], NoDecode] = []
    etcd_user: str = ""  # etcd's authentication (`halfmq up` and compose turn it on): the user, and a file with its password
    etcd_password_file: Path | None = None

    @field_validator("retention", mode="before")
    @classmethod
    def _duration(cls, value: object) -> object:
        return parse_duration(value) if isinstance(value, str) else value

    @field_validator("replication", mode="before")
    @classmethod
    def _replication_is_the_stream(cls, value: object) -> object:
        if value not in ("", "stream"):
            raise ValueError(f"HALFMQ_BROKER_REPLICATION={value} was removed: a follower replicates over one stream to its "
                             "leader (decision 054); unset it")
        return value

    @field_validator("kafka_advertise")
    @classmethod
    def _kafka_address(cls, value: str) -> str:
        if value:
            parse_kafka_address(value)
        return value.strip()

    @field_validator("check_url_allow", "retry_delays", "allowed_hosts", "cluster_members", mode="before")
    @classmethod
    def _csv(cls, value: object) -> object:
        return _split_csv(value)

    @model_validator(mode="after")
    def _request_bytes_follow_message_size(self) -> BrokerSettings:
        if not self.max_request_bytes:
            self.max_request_bytes = default_max_request_bytes(self.max_message_size)
        return self

    @model_validator(mode="after")
    def _a_principal_holds_a_full_window(self) -> BrokerSettings:
        if self.idempotent_sequences_per_principal < 2 * self.idempotent_send_window:
            raise ValueError(f"idempotent_sequences_per_principal ({self.idempotent_sequences_per_principal}) must be at least "
                             f"twice idempotent_send_window ({self.idempotent_send_window}): one producer's window holds that many")
        return self

    @model_validator(mode="after")
    def _early_delete_before_refusing_sends(self) -> BrokerSettings:
        if self.disk_early_delete_ratio > self.disk_refuse_sends_ratio:
            raise ValueError(f"disk_early_delete_ratio ({self.disk_early_delete_ratio}) must not exceed disk_refuse_sends_ratio "
                             f"({self.disk_refuse_sends_ratio}): the broker frees space before it refuses sends")
        return self

    @model_validator(mode="after")
    def _peer_ca_file_loads(self) -> BrokerSettings:
        if self.peer_ca_file is not None:
            try:
                verified_tls(self.peer_ca_file)
            except (OSError, ssl.SSLError) as exc:  # refused at start, not at the first call to a peer
                raise ValueError(f"peer_ca_file {self.peer_ca_file} is not a readable PEM CA bundle: {exc}") from None
        return self

    @model_validator(mode="after")
    def _grpc_port_follows_port(self) -> BrokerSettings:
        if self.grpc_port is None:
            self.grpc_port = default_grpc_port(self.port)
        return self

    @model_validator(mode="after")
    def _members_of_a_set(self) -> BrokerSettings:
        if not self.cluster:
            return self
        members = self.members()
        if not members:
            raise ValueError("a broker set needs its members: HALFMQ_BROKER_CLUSTER_MEMBERS=n1=http://HOST:PORT,n2=...")
        if self.node_id and self.node_id not in members:
            raise ValueError(f"node id {self.node_id!r} is not one of the set's members {sorted(members)}")
        if self.node_id and not self.advertise_url:
            self.advertise_url = members[self.node_id]
        elif self.node_id and self.advertise_url.rstrip("/") != members[self.node_id]:
            raise ValueError(f"advertise_url {self.advertise_url} is not node {self.node_id}'s member URL {members[self.node_id]}")
        if "cluster_size" not in self.model_fields_set:
            self.cluster_size = len(members)
        elif self.cluster_size != len(members):
            raise ValueError(f"cluster_size {self.cluster_size} but {len(members)} members are configured")
        if bool(self.etcd_user) != (self.etcd_password_file is not None):
            raise ValueError("etcd_user and etcd_password_file go together")
        return self

    def kafka_advertised(self) -> tuple[str, int]:
        """Where Kafka's clients are sent to reach this node's Kafka front: kafka_advertise, else derived as it always was."""
        if self.kafka_advertise:
            return parse_kafka_address(self.kafka_advertise)
        return urllib.parse.urlsplit(self.advertise_url).hostname or self.host, self.kafka_port

    def members(self) -> dict[str, str]:
        """The set's configured members, node id -> URL (empty outside a set)."""
        from halfmq.broker.cluster.members import parse_members

        return parse_members(self.cluster_members)

    @field_validator("check_url_allow")
    @classmethod
    def _allow_entries(cls, value: list[str]) -> list[str]:
        from halfmq.broker.half_messages.check_url import parse_allow_entry

        for entry in value:
            parse_allow_entry(entry)
        return value
