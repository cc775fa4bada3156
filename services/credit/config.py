"""Credit service settings (env prefix CREDIT_), each with a default that works locally."""

from __future__ import annotations

from typing import Annotated

from pydantic_settings import NoDecode, SettingsConfigDict

from ..settings_base import ServiceSettings


class CreditSettings(ServiceSettings):
    model_config = SettingsConfigDict(env_prefix="CREDIT_", extra="ignore")

    port: int = 8002
    database_url: str = "sqlite:///./data/credit.db"
    allowed_hosts: Annotated[list[str], NoDecode] = ["credit"]  # the compose service's name (ServiceSettings.allowed_hosts)
    consumer_group: str = "credit_group"
    points_per_unit: int = 1
    # Handlers are coroutines waiting on a shared group commit (halfmq/client/database_writes.py), so
    # let a whole received batch in at once: it is then credited in one database transaction.
    consumer_concurrency: int = 64
    max_messages: int = 64
    invisible_seconds: float = 30.0
    wait_seconds: float = 5.0
    # The inbox's rows outlive the broker's longest redelivery window (docs/decisions/024-inbox.md).
    inbox_retention_days: float = 7.0
    inbox_purge_interval: float = 3600.0
    # Fault injection (needs faults_enabled): exit right after crediting this order, before its ack.
    crash_after_commit_order: str | None = None
