"""Redis's protected mode for the broker: no open broker on a reachable address by accident."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name could resolve anywhere


def refusal(host: str, auth_enabled: bool, insecure: bool) -> str | None:
    """The one-line reason a broker must not start, or None when it may."""
    if auth_enabled or insecure or is_loopback(host):
        return None
    return (f"refusing to serve on {host} without authentication: set HALFMQ_BROKER_AUTH_FILE "
            f"(see `halfmq admin init`), bind to 127.0.0.1, or pass --insecure to run an open broker anyway")
