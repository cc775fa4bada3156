"""Credit service settings (env prefix CREDIT_), each with a default that works locally."""

from __future__ import annotations

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
    consumer_concurrency: int = 8
    max_messages: int = 32
    invisible_seconds: float = 30.0
    wait_seconds: float = 5.0
    db_pool_size: int = 20
    log_level: str = "info"
    # Fault injection for tests and demos: exit right after crediting this order, before its ack.
    faults_enabled: bool = False
    crash_after_commit_order: str | None = None
