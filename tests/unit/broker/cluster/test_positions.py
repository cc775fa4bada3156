"""A node about to stand asks the other members' positions: the ones that answer count, a stopped one is not waited for."""

from __future__ import annotations

import asyncio
from pathlib import Path

from halfmq import wire
from halfmq.broker.cluster.peers import PeerClient, PeerRequest, PeerResponse, PeerUnreachable
from halfmq.broker.cluster.positions import ask_members, position_of
from halfmq.broker.cluster.term_history import TermHistory
from halfmq.broker.store.message_store import MessageStore, PutItem, StoreConfig
from tests.support.fake_peers import fake_peers

MEMBERS = {"n1": "http://n1", "n2": "http://n2", "n3": "http://n3", "n4": "http://n4", "n5": "http://n5"}


def _members_that(answer: dict[str, str]) -> PeerClient:
    """n2.. as told: "answers", "refuses" (nothing listens), "hangs" (stopped), "lies" (names another node)."""
    async def handle(request: PeerRequest) -> PeerResponse:
        node = request.url.host
        how = answer[node]
        if how == "refuses":
            raise PeerUnreachable("refused", refused=True)
        if how == "hangs":
            await asyncio.Event().wait()  # never answers: a stopped node
        named = "n9" if how == "lies" else node
        return PeerResponse.of(200, json=wire.to_wire(wire.Position(node_id=named, term=3, last_term=3, durable_offset=10)))
    return fake_peers(handle, *MEMBERS.values())


async def test_the_members_that_answer_in_time_are_counted_by_id_and_the_others_are_not() -> None:
    async with _members_that({"n2": "answers", "n3": "refuses", "n4": "lies", "n5": "hangs"}) as http:
        answers = await ask_members(http, MEMBERS, "n1", seconds=0.2)
    assert set(answers) == {"n2"}
    assert answers["n2"].key == (3, 10)


async def test_a_candidate_stops_waiting_for_a_stopped_member_once_a_majority_has_answered() -> None:
    async with _members_that({"n2": "answers", "n3": "answers", "n4": "hangs", "n5": "hangs"}) as http:
        answers = await asyncio.wait_for(ask_members(http, MEMBERS, "n1", seconds=30), 5)
    assert set(answers) == {"n2", "n3"}  # with n1, three of five


def test_a_nodes_position_names_the_last_term_that_starts_within_what_it_has_on_disk(tmp_path: Path) -> None:
    store = MessageStore(StoreConfig(tmp_path))
    try:
        store.create_topic("T", 1)
        end = store.put([PutItem("T", 0, b"m")])[1]
        store.wait_flushed(end).result(5)  # type: ignore[union-attr]
        history = TermHistory(tmp_path / "term-history.json")
        history.begin(3, 0)
        history.begin(5, end)
        assert position_of("n1", 6, history, store).key == (5, end)  # term 5 starts at the durable end: it counts
        history.begin(7, end + 100)  # appended past the durable end, not on disk yet
        assert position_of("n1", 7, history, store).key == (5, end)
    finally:
        store.close()
