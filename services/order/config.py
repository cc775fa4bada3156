"""Order service settings (env prefix ORDER_), each with a default that works locally."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import Field
from pydantic_settings import NoDecode, SettingsConfigDict

from ..settings_base import ServiceSettings


class OrderSettings(ServiceSettings):
    model_config = SettingsConfigDict(env_prefix="ORDER_", extra="ignore")

    port: int = 8001
    database_url: str = "sqlite:///./data/order.db"
    public_url: str = "http://127.0.0.1:8001"  # where the broker reaches this service's check-back endpoint
    allowed_hosts: Annotated[list[str], NoDecode] = ["order"]  # the compose service's name (ServiceSettings.allowed_hosts)
    producer_group: str = "order_producer_group"
    local_tx_timeout: float = 30.0
    # The barrier's horizon is local_tx_timeout + commit_grace (halfmq.client.sqlalchemy.horizon).
    commit_grace: float = 30.0
    # Transaction records are kept this long (seconds): past any check-back the broker can still send.
    record_retention: float = 86_400.0
    heartbeat_interval: float = 10.0
    # Each order's local transaction also sends a "payment due" message (halfmq's ``also``), delayed this long; the
    # service's own consumer group cancels the order if it is still unpaid when it arrives. The demo uses 10 s.
    payment_due_seconds: float = Field(default=1800.0, ge=0, le=3 * 24 * 3600)
    payment_due_topic: str = "ORDER_PAYMENT_DUE"
    payment_due_group: str = "order_payment_due_group"
    # The producer group's check-back secret, as a value or a file (Docker secrets).
    check_secret: str | None = None
    check_secret_file: Path | None = None

    def advertised_url(self) -> str:
        return self.public_url

    @property
    def check_url(self) -> str:
        return self.public_url.rstrip("/") + "/halfmq/check"
