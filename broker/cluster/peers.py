"""The one way a node calls another node: only configured members, and only they get the cluster token.

The follower's fetches, its term-end question and its state copies all go
through ``PeerClient.send``; a URL outside the members is refused before a
byte leaves, so the token (admin on ``cluster:broker``) cannot be handed to
whatever a leader key in etcd names (issue 30). Redirects are never followed.
The SDK keeps the same rule for its own token (halfmq.client.broker_urls).
"""

from __future__ import annotations

from typing import Any

import httpx

from .members import is_member_url
from .peer_transport import PeerTransport


class NotAMember(httpx.RequestError):
    """The URL is not one of the set's configured members: nothing was sent."""


class PeerClient(httpx.AsyncClient):
    def __init__(self, members: dict[str, str], token: str | None, **kwargs: Any) -> None:
        kwargs.setdefault("transport", PeerTransport())  # the lean one: replication calls many times a second
        super().__init__(follow_redirects=False, **kwargs)
        self.members = dict(members)
        self._token = token

    async def send(self, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        if not is_member_url(str(request.url), self.members):
            raise NotAMember(f"{request.url.copy_with(query=None)} is not a member of this broker set "
                             f"({', '.join(sorted(self.members.values()))}): not called", request=request)
        if self._token:
            request.headers["authorization"] = f"Bearer {self._token}"
        kwargs["follow_redirects"] = False
        return await super().send(request, **kwargs)
