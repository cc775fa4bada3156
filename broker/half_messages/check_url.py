"""Which check-back URLs the broker agrees to dial (it calls URLs strangers give it).

An allow-list entry names scheme, host and port (``http://order:8001``, or
``http://127.0.0.1:*`` for any port); a host alone is not enough, since one
host serves many things. The name is resolved once, at registration, and
every address it resolves to is checked: no link-local, cloud metadata,
unspecified or multicast address, and never the broker itself (a check_url
aimed at its own force-rollback route would make it roll back someone else's
transaction). The broker then dials the address it checked, not the name
again, so a DNS answer that changes later cannot point it elsewhere.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from halfmq.errors import CheckUrlRefused

DEFAULT_PORTS = {"http": 80, "https": 443}
# Cloud metadata services outside link-local (AWS IPv6, Alibaba, Oracle); 169.254.169.254 is link-local anyway.
METADATA_ADDRESSES = frozenset(ipaddress.ip_address(a) for a in ("fd00:ec2::254", "100.100.100.200", "192.0.0.192"))

Resolve = Callable[[str, int], list[str]]
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True, slots=True)
class AllowEntry:
    scheme: str
    host: str
    port: int | None  # None: any port

    def matches(self, scheme: str, host: str, port: int) -> bool:
        return self.scheme == scheme and self.host == host and self.port in (None, port)


def parse_allow_entry(text: str) -> AllowEntry:
    """``scheme://host:port`` or ``scheme://host:*``; ValueError for a bare host or another scheme."""
    if "://" not in text:
        raise ValueError(f"check_url_allow entry {text!r} must name scheme, host and port, e.g. http://{text}:8001 or http://{text}:*")
    wildcard = text.endswith(":*")
    parts = urlsplit(text[:-2] if wildcard else text)
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname or parts.path not in ("", "/"):
        raise ValueError(f"check_url_allow entry {text!r} must be http(s)://host:port")
    return AllowEntry(parts.scheme, parts.hostname.lower(), None if wildcard else parts.port or DEFAULT_PORTS[parts.scheme])


@dataclass(frozen=True, slots=True)
class CheckTarget:
    """A registered check_url and the address it resolved to when it was checked."""

    url: str
    address: str

    def dial(self) -> tuple[str, dict[str, str], str | None]:
        """URL with the checked address in place of the name, the Host header and (https) the name for SNI and the
        certificate's check (None over plain http)."""
        parts = urlsplit(self.url)
        ip = ipaddress.ip_address(self.address)
        host = f"[{ip}]" if ip.version == 6 else str(ip)
        netloc = f"{host}:{parts.port}" if parts.port else host
        tls_name = parts.hostname if parts.scheme == "https" and parts.hostname else None
        return urlunsplit(parts._replace(netloc=netloc)), {"host": parts.netloc}, tls_name


def resolve_host(host: str, port: int) -> list[str]:
    try:
        # str(): typeshed lets a sockaddr start with an int; an INET one starts with the address, a str
        return sorted({str(info[4][0]) for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)})
    except (socket.gaierror, UnicodeError):
        return []


@dataclass(frozen=True, slots=True)
class OwnAddress:
    """Where the broker itself listens: a check_url may never point there."""

    host: str
    port: int
    local_addresses: frozenset[Address] = frozenset()

    @classmethod
    def of(cls, host: str, port: int, resolve: Resolve = resolve_host) -> OwnAddress:
        names = {host, socket.gethostname(), "localhost"}
        return cls(host, port, frozenset(ipaddress.ip_address(a) for n in names for a in resolve(n, port)))

    def is_self(self, ip: Address, port: int) -> bool:
        if port != self.port:
            return False
        if ip.is_loopback or ip in self.local_addresses:
            return True
        try:
            return ipaddress.ip_address(self.host.strip("[]")).is_unspecified and ip.is_private
        except ValueError:
            return False


def refused_address(ip: Address) -> str | None:
    """Why the broker must not dial ``ip``, or None."""
    mapped = getattr(ip, "ipv4_mapped", None)
    ip = mapped or ip
    if ip in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if ip.is_link_local:
        return "link-local (cloud metadata lives there)"
    if ip.is_unspecified or ip.is_multicast or (ip.is_reserved and not ip.is_loopback):
        return "not a unicast address"
    return None


def validate_check_url(url: str, allow: Iterable[str], own: OwnAddress, resolve: Resolve = resolve_host) -> CheckTarget:
    """The checked target for ``url``; CheckUrlRefused for anything the broker should not dial."""
    scheme, host, port = _dialable(url)
    entries = [parse_allow_entry(e) for e in allow]
    if not any(e.matches(scheme, host, port) for e in entries):
        raise CheckUrlRefused(f"check_url {scheme}://{host}:{port} is not in check_url_allow",
                              allowed=[f"{e.scheme}://{e.host}:{e.port or '*'}" for e in entries])
    addresses = resolve(host, port)
    if not addresses:
        raise CheckUrlRefused(f"check_url host {host!r} does not resolve")
    for text in addresses:
        ip = ipaddress.ip_address(text.split("%")[0])
        why = refused_address(ip)
        if why:
            raise CheckUrlRefused(f"check_url host {host!r} resolves to {ip}: {why}")
        if own.is_self(ip, port):
            raise CheckUrlRefused(f"check_url {scheme}://{host}:{port} is the broker itself")
    return CheckTarget(url, addresses[0].split("%")[0])


def _dialable(url: str) -> tuple[str, str, int]:
    """``url``'s scheme, host (lower case) and port; CheckUrlRefused unless it is a plain http(s) URL naming a host."""
    if len(url) > 2048:
        raise CheckUrlRefused("check_url is longer than 2048 characters")
    if any(ch.isspace() or not ch.isprintable() for ch in url):
        # urlsplit takes control, invisible and unencodable characters that no HTTP client can dial
        raise CheckUrlRefused("check_url must not contain whitespace, control or invisible characters")
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        explicit_port = parts.port  # raises ValueError on a bad port
    except ValueError:
        raise CheckUrlRefused(f"check_url {url!r} is not a valid URL") from None
    if parts.scheme not in DEFAULT_PORTS:
        raise CheckUrlRefused(f"check_url must be http or https, not {parts.scheme or 'nothing'!r}")
    if parts.username or parts.password:
        raise CheckUrlRefused("check_url must not carry credentials")
    if not host:
        raise CheckUrlRefused(f"check_url {url!r} names no host")
    return parts.scheme, host, explicit_port or DEFAULT_PORTS[parts.scheme]
