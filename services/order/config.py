"""Order service settings (env prefix ORDER_), each with a default that works locally."""

from __future__ import annotations

from pathlib import Path

from pydantic_settings import BaseSettings, SettingsConfigDict


class OrderSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ORDER_", extra="ignore")

    host: str = "127.0.0.1"
    port: int = 8001
    database_url: str = "sqlite:///./data/order.db"
    broker_url: str = "http://127.0.0.1:10911"
    public_url: str = "http://127.0.0.1:8001"  # where the broker reaches this service's check-back endpoint
    topic: str = "ORDER_TOPIC"
    producer_group: str = "order_producer_group"
    local_tx_timeout: float = 30.0
    faults_enabled: bool = False
    heartbeat_interval: float = 10.0
    db_pool_size: int = 20
    # Most orders one database transaction may carry (group commit: orders whose local
    # transactions run at the same time share one; see services/group_commit.py).
    write_batch_max: int = 64
    log_level: str = "info"
    # Security: the broker token and the producer group's check-back secret, each as a value or a file
    # (Docker secrets); TLS for this service's own endpoint and a private CA for the broker's.
    broker_token: str | None = None
    broker_token_file: Path | None = None
    check_secret: str | None = None
    check_secret_file: Path | None = None
    broker_ca_file: Path | None = None
    tls_cert_file: Path | None = None
    tls_key_file: Path | None = None

    @property
    def check_url(self) -> str:
        return self.public_url.rstrip("/") + "/halfmq/check"
