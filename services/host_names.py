"""The services behind the broker's Host gate (broker/serving/host_gate.py): a DNS-rebinding page reaches no route.

A page on ``evil.example`` rebound to 127.0.0.1 would otherwise place orders, refunds and payments on a loopback
service (none of its routes asks for a token). Each ``create_app`` installs the gate last, so it is the outermost
layer: before the request's span, the order service's fast path and every route.
"""

from __future__ import annotations

from fastapi import FastAPI

from halfmq.broker.serving.allowed_hosts import HostAllowList
from halfmq.broker.serving.host_gate import HostGate

from .settings_base import ServiceSettings


def install(app: FastAPI, settings: ServiceSettings) -> None:
    """Refuse every request whose Host is none of the service's names (400 HOST_NOT_ALLOWED, naming ``{PREFIX}ALLOWED_HOSTS``)."""
    allowed = HostAllowList.for_server(settings.host, settings.allowed_hosts, settings.advertised_url())
    app.add_middleware(HostGate, allowed=allowed, setting=f"{settings.model_config.get('env_prefix', '')}ALLOWED_HOSTS")
