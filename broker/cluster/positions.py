"""Where each node's log stands, for an election: this node's own position, and what the other members answer.

A node about to stand asks every other member ``GET /v1/replication/position``
at once, each with a short timeout: a dead member refuses at once, a stopped
one does not answer in time, and either only does not count
(``decisions.may_lead`` decides with the answers there are).
"""

from __future__ import annotations

import asyncio

from halfmq import wire
from halfmq.broker.store.message_store import MessageStore

from .decisions import majority, may_lead
from .peers import PeerClient, PeerError
from .term_history import TermHistory

POSITION_TIMEOUT = 0.5  # seconds one member may take to answer


def position_of(node_id: str, term: int, history: TermHistory, store: MessageStore) -> wire.Position:
    """How far this node's log is on disk, and the last term its history starts at or before that offset.

    A history entry that starts past the durable end names bytes not yet on disk
    (appended, fsync pending): counting its term would rank the node above one that
    has more on disk.
    """
    durable = store.flushed_offset
    last_term = max((term for term, start in history.entries if start <= durable), default=0)
    return wire.Position(node_id=node_id, term=term, last_term=last_term, durable_offset=durable)


async def may_stand(own: wire.Position, http: PeerClient, members: dict[str, str], in_sync: frozenset[str] | None,
                    cluster_size: int) -> bool:
    """Whether the node at ``own`` may stand for election now: against the other members' answers (``decisions.may_lead``).

    No: a member that answered is later (it stands instead), or too few answered (the next tick asks again).
    """
    return may_lead(own, await ask_members(http, members, own.node_id), in_sync, cluster_size)


async def ask_members(http: PeerClient, members: dict[str, str], node_id: str,
                      seconds: float = POSITION_TIMEOUT) -> dict[str, wire.Position]:
    """The positions of the other members that answered within ``seconds``, by node id.

    It stops waiting once enough have answered to make a majority with this node:
    any majority meets the one that holds every acknowledged write, so a later
    answer could change who is preferred, never whether standing is safe, and a
    stopped member does not cost its whole timeout on every election.
    """
    others = {n: url for n, url in members.items() if n != node_id}
    enough = majority(len(members)) - 1
    asking = {asyncio.ensure_future(_ask(http, url, seconds)): n for n, url in others.items()}
    answers: dict[str, wire.Position] = {}
    pending = set(asking)
    try:
        while pending and len(answers) < enough:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                position = task.result()
                if position is not None and position.node_id == asking[task]:
                    answers[asking[task]] = position
    finally:
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
    return answers


async def _ask(http: PeerClient, url: str, seconds: float) -> wire.Position | None:
    try:
        async with asyncio.timeout(seconds):  # the whole call, not each of its phases
            answer = await http.get(f"{url}/v1/replication/position")
        answer.raise_for_status()
        return wire.decode(answer.json(), wire.Position)
    except (PeerError, ValueError, TimeoutError):
        return None
