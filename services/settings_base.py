"""What every service's settings share; each service adds its env prefix, port, database and own knobs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from halfmq.client.environment import env_token, env_url
from halfmq.tracing import IDLE_ENV, TRACES_ENV, Exporter

from .credentials import secret_value


class ServiceSettings(BaseSettings):
    model_config = SettingsConfigDict(extra="ignore")

    host: str = "127.0.0.1"
    port: int = 8000
    database_url: str = "sqlite:///./data/service.db"
    broker_url: str = "http://127.0.0.1:10911"
    topic: str = "ORDER_TOPIC"
    db_pool_size: int = 20
    # Most writes one database transaction may carry (group commit: writes that arrive
    # while one transaction runs share the next; see halfmq/client/database_writes.py).
    write_batch_max: int = 64
    log_level: str = "info"
    # Security: the broker token as a value or a file (Docker secrets); a private CA for the
    # broker's TLS; TLS for this service's own endpoint.
    broker_token: str | None = None
    broker_token_file: Path | None = None
    broker_ca_file: Path | None = None
    tls_cert_file: Path | None = None
    tls_key_file: Path | None = None
    # HTTP limits, the broker's names and defaults (broker/serving/http_serving.py serves both): a deadline for each
    # request head, its size, and a cap on connections (past it: 503), so half-sent heads cannot hold every descriptor.
    request_head_timeout: float = Field(default=20.0, gt=0, le=600)
    max_request_head_bytes: int = Field(default=64 * 1024, ge=8192)
    max_connections: int = Field(default=10_000, ge=16)
    listen_backlog: int = Field(default=2048, ge=128)
    # Names answered besides loopback, the bind address, the advertised URL's host and IP literals: any other Host gets 400
    # HOST_NOT_ALLOWED (DNS rebinding; the broker's gate, broker/serving/host_gate.py); "*" for any. Each service lists its
    # compose name by default, so a service bound to 0.0.0.0 stays gated there; an empty list on 0.0.0.0 answers any Host.
    allowed_hosts: Annotated[list[str], NoDecode] = []
    # Fault injection for tests and demos (each service documents its faults).
    faults_enabled: bool = False
    # Tracing (docs/tracing.md): OpenTelemetry's OTEL_TRACES_EXPORTER / OTEL_SDK_DISABLED, or this shortcut,
    # HALFMQ_TRACES=otlp|console|none, one variable for every halfmq process (it wins over OTEL_TRACES_EXPORTER); off when unset.
    traces: Exporter | Literal[""] = Field(default="", validation_alias=TRACES_ENV)
    # HALFMQ_TRACES_IDLE=true: spans for GET /healthz, /metrics and receives that answered no message too (noise otherwise).
    traces_idle: bool = Field(default=False, validation_alias=IDLE_ENV)

    @field_validator("allowed_hosts", mode="before")
    @classmethod
    def _csv(cls, value: object) -> object:
        return [part.strip() for part in value.split(",") if part.strip()] if isinstance(value, str) else value

    @model_validator(mode="before")
    @classmethod
    def _clients_environment(cls, data: Any) -> Any:
        """Where every halfmq client finds the broker, when the service's own names (``ORDER_BROKER_URL``, …) are unset:
        $HALFMQ_URL and $HALFMQ_TOKEN."""
        if not isinstance(data, dict):
            return data
        url, token = env_url(), env_token()
        if url and "broker_url" not in data:
            data = {**data, "broker_url": url}
        if token and "broker_token" not in data and "broker_token_file" not in data:
            data = {**data, "broker_token": token}
        return data

    def advertised_url(self) -> str:
        """The URL others are given for this service, whose host it answers to (the order service's check-back URL)."""
        return ""

    def broker_token_value(self) -> str | None:
        return secret_value(self.broker_token, self.broker_token_file)

    def broker_verify(self) -> str | None:
        """The SDK's ``verify``: the private CA's path, or None for the system's."""
        return str(self.broker_ca_file) if self.broker_ca_file else None
