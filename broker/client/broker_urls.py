"""A broker set's URLs on the client side: which one to ask, and where to go after NOT_LEADER.

``base_url`` (and the services' ``*_BROKER_URL``) may be a comma-separated list
of the nodes of a broker set. A request goes to the node believed to lead; a 421
NOT_LEADER names the leader, which is followed only if it is one of the listed
URLs (a bearer token is never sent to an address the user did not configure);
otherwise, and when a node cannot be reached at all, the next URL is tried. A
refused (421) or unconnected request did nothing on the broker, so trying it on
another node is safe for every call.
"""

from __future__ import annotations

from halfmq.broker.errors import BrokerError, BrokerUnavailable

NOT_LEADER = "NOT_LEADER"


def split_urls(spec: str) -> list[str]:
    return [part.strip().rstrip("/") for part in spec.split(",") if part.strip()]


class BrokerUrls:
    def __init__(self, urls: list[str]) -> None:
        if not urls:
            raise ValueError("no broker URL given")
        self.urls = urls
        self._current = 0

    @property
    def base(self) -> str:
        return self.urls[self._current]

    @property
    def several(self) -> bool:
        return len(self.urls) > 1

    @property
    def attempts(self) -> int:
        """How many nodes one call may try before giving up (each at most twice)."""
        return 2 * len(self.urls)

    def redirect(self, error: BrokerError, asked: str) -> bool:
        """After ``error`` from ``asked``: True if the call should go to another node now."""
        if not self.several:
            return False
        if error.code == NOT_LEADER:
            leader = str(error.extra.get("leader_url") or "").rstrip("/")
            if leader in self.urls and leader != asked:
                self._current = self.urls.index(leader)
                return True
            self._next(asked)
            return True
        if isinstance(error, BrokerUnavailable) and not error.sent:
            self._next(asked)
            return True
        return False

    def _next(self, asked: str) -> None:
        if self.base == asked:
            self._current = (self._current + 1) % len(self.urls)
