"""A node's peer client whose peers are a function: the member check and the token run, nothing goes on a network."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable

from halfmq.broker.cluster.peers import PeerClient, PeerRequest, PeerResponse

Handle = Callable[[PeerRequest], PeerResponse | Awaitable[PeerResponse]]


def fake_peers(handle: Handle, *members: str, token: str | None = None) -> PeerClient:
    """A ``PeerClient`` for the member URLs given, each answered by ``handle`` (sync or async)."""
    async def exchange(request: PeerRequest) -> PeerResponse:
        answer = handle(request)
        return await answer if inspect.isawaitable(answer) else answer

    return PeerClient({f"m{i}": url for i, url in enumerate(members)}, token, exchange=exchange)
