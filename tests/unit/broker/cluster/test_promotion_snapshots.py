"""A follower takes its leader's newer state snapshot, so a promotion replays what changed since (cluster.promotion_snapshots)."""

from __future__ import annotations

from pathlib import Path

import pytest

from halfmq.broker.cluster.catch_up import SNAPSHOT_ENTRIES_HEADER, SNAPSHOT_SIZE_HEADER
from halfmq.broker.cluster.peers import PeerRequest, PeerResponse
from halfmq.broker.cluster.promotion_snapshots import PROBE_OFFSET, PromotionSnapshots, own_entries, take_leaders_snapshot
from halfmq.broker.store import state_snapshot
from halfmq.broker.store.state_snapshot import FILE, StateSnapshot
from tests.support.fake_peers import fake_peers

LEADER = "http://leader"


@pytest.mark.parametrize(("own", "leaders", "taken"), [
    (None, None, False),  # the leader has written none yet
    (None, 4, True),  # this node has none: any of the leader's is newer
    (3, 4, True),
    (4, 4, False),  # the same one: a request, no transfer
    (9, 4, False),  # this node led and wrote a newer one itself: kept
])
def test_the_leaders_snapshot_is_taken_only_when_it_counts_more_entries_than_this_nodes(
        own: int | None, leaders: int | None, taken: bool) -> None:
    assert take_leaders_snapshot(own, leaders) is taken


def test_own_entries_reads_the_newest_files_header_and_is_none_without_one(tmp_path: Path) -> None:
    assert own_entries(tmp_path) is None
    state_snapshot.save(tmp_path / FILE, StateSnapshot(7, 0, 0, 0, (), None))
    assert own_entries(tmp_path) == 7
    (tmp_path / FILE).write_bytes(b"damaged")
    assert own_entries(tmp_path) is None


class Store:
    def __init__(self, root: Path) -> None:
        self.config = type("Config", (), {"data_dir": root})()


class Taker:
    def __init__(self) -> None:
        self.taken = 0

    async def take_and_install(self, leader_url: str, store: object, starting_at: int = 0) -> bool:
        self.taken += 1
        return True


def _leader_with(entries: int | None, asked: list[PeerRequest]):  # type: ignore[no-untyped-def]
    def handle(request: PeerRequest) -> PeerResponse:
        asked.append(request)
        if entries is None:
            return PeerResponse.of(404, json={"code": "STATE_SNAPSHOT_NOT_FOUND"})
        return PeerResponse.of(200, headers={SNAPSHOT_ENTRIES_HEADER: str(entries), SNAPSHOT_SIZE_HEADER: "100"})
    return handle


@pytest.mark.parametrize(("leaders", "own", "transfers"), [(None, None, 0), (5, None, 1), (5, 5, 0), (6, 5, 1)])
async def test_a_round_asks_past_the_end_and_transfers_only_a_newer_snapshot(
        tmp_path: Path, leaders: int | None, own: int | None, transfers: int) -> None:
    if own is not None:
        state_snapshot.save(tmp_path / FILE, StateSnapshot(own, 0, 0, 0, (), None))
    asked: list[PeerRequest] = []
    taker = Taker()
    http = fake_peers(_leader_with(leaders, asked), LEADER)
    keeper = PromotionSnapshots("n2", http, taker, 10.0)  # type: ignore[arg-type]
    assert await keeper.once(LEADER, Store(tmp_path)) is (transfers == 1)  # type: ignore[arg-type]
    assert taker.taken == transfers
    assert [r.url.query["offset"] for r in asked] == [str(PROBE_OFFSET)]  # one probe: the headers alone
