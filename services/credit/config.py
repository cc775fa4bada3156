"""Credit service settings (env prefix CREDIT_), each with a default that works locally."""

from __future__ import annotations

from pathlib import Path

from pydantic_settings import BaseSettings, SettingsConfigDict


class CreditSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CREDIT_", extra="ignore")

    host: str = "127.0.0.1"
    port: int = 8002
    database_url: str = "sqlite:///./data/credit.db"
    broker_url: str = "http://127.0.0.1:10911"
    topic: str = "ORDER_TOPIC"
    consumer_group: str = "credit_group"
    points_per_unit: int = 1
    # Handlers are coroutines waiting on a shared group commit (services/group_commit.py), so
    # let a whole received batch in at once: it is then credited in one database transaction.
    consumer_concurrency: int = 64
    max_messages: int = 64
    invisible_seconds: float = 30.0
    wait_seconds: float = 5.0
    db_pool_size: int = 20
    write_batch_max: int = 64  # most credits one database transaction may carry
    log_level: str = "info"
    broker_token: str | None = None  # or broker_token_file (Docker secrets)
    broker_token_file: Path | None = None
    broker_ca_file: Path | None = None
    tls_cert_file: Path | None = None
    tls_key_file: Path | None = None
    # Fault injection for tests and demos: exit right after crediting this order, before its ack.
    faults_enabled: bool = False
    crash_after_commit_order: str | None = None
