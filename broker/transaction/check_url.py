"""Which check-back URLs the broker agrees to dial (it calls URLs strangers give it)."""

from __future__ import annotations

from urllib.parse import urlsplit

from broker.errors import CheckUrlRefused


def validate_check_url(url: str, allowed_hosts: list[str]) -> str:
    """Accept http(s) URLs whose host is on the allow list; raise CheckUrlRefused otherwise."""
    if len(url) > 2048:
        raise CheckUrlRefused("check_url is longer than 2048 characters")
    if any(ch.isspace() or not ch.isprintable() for ch in url):
        # urlsplit takes control, invisible and unencodable characters that no HTTP client can dial
        raise CheckUrlRefused("check_url must not contain whitespace, control or invisible characters")
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        parts.port  # raises ValueError on a bad port
    except ValueError:
        raise CheckUrlRefused(f"check_url {url!r} is not a valid URL") from None
    if parts.scheme not in ("http", "https"):
        raise CheckUrlRefused(f"check_url must be http or https, not {parts.scheme or 'nothing'!r}")
    if parts.username or parts.password:
        raise CheckUrlRefused("check_url must not carry credentials")
    allowed = {h.lower().strip("[]") for h in allowed_hosts}
    if "*" not in allowed and host not in allowed and not any(h.startswith(".") and host.endswith(h) for h in allowed):
        raise CheckUrlRefused(f"check_url host {host!r} is not in check_url_allow {sorted(allowed)}")
    return url
