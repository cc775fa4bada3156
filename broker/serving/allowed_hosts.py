"""Which ``Host`` a halfmq server answers to: the DNS-rebinding guard, decided without HTTP.

A page on ``evil.example`` whose DNS answer flips to 127.0.0.1 gets a browser to
send it requests for a loopback server, with ``Host: evil.example`` and, on the
page's own origin, the right to read the answers (the broker's console and its CSRF
token, a service's ``POST /orders``). A browser always names the host it thinks it
talks to, so every halfmq server (the broker, the order and credit services:
``host_gate.HostGate``) answers only its own names: the loopback names, the address
it is bound to, the URL it advertises (a broker to its set, the order service to the
broker for check-backs), and its ``allowed_hosts`` (``HALFMQ_BROKER_ALLOWED_HOSTS``,
``ORDER_ALLOWED_HOSTS``, ``CREDIT_ALLOWED_HOSTS``; ``*`` for any). An IP literal is
always allowed: a rebinding page has a name, never an address. A request with no Host
header comes from no browser and is served.

A server bound to every interface (0.0.0.0, ::) with no names listed takes any Host:
the broker's default there (it runs with auth, protected mode). The services list
their compose names by default (``order``, ``credit``), so they stay gated there.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
ANY = "*"
_WILDCARD_BINDS = frozenset({"", "0.0.0.0", "::"})


def host_name(header: str) -> str | None:
    """The name in a Host header, lower case, without its port or a trailing dot; None when it is malformed."""
    text = header.strip().lower()
    if text.startswith("["):
        name, bracket, rest = text[1:].partition("]")
        if not bracket:
            return None
    else:
        name, colon, port = text.partition(":")
        rest = colon + port
    if rest and not (rest[0] == ":" and rest[1:].isdigit() and rest[1:].isascii()):
        return None
    name = name.removesuffix(".")
    return name or None


def _is_ip_literal(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class HostAllowList:
    names: frozenset[str]
    any_name: bool = False

    @classmethod
    def for_server(cls, bind_host: str, allowed_hosts: list[str] | tuple[str, ...] = (), advertise_url: str = "") -> HostAllowList:
        configured = {h.strip().lower().removesuffix(".") for h in allowed_hosts if h.strip()}
        bind = bind_host.strip("[]").lower()
        any_name = ANY in configured or (bind in _WILDCARD_BINDS and not configured)
        names = set(LOOPBACK_NAMES) | configured - {ANY}
        if bind not in _WILDCARD_BINDS:
            names.add(bind)
        advertised = urlsplit(advertise_url).hostname if advertise_url else None
        if advertised:
            names.add(advertised.lower())
        return cls(frozenset(names), any_name)

    def allows(self, header: str | None) -> bool:
        if header is None or self.any_name:
            return True
        name = host_name(header)
        if name is None:
            return False
        return name in self.names or _is_ip_literal(name)
