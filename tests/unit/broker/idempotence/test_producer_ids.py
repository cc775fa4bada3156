"""The idempotent producer's ids (ProducerIds) on a real store, through the coordinator that replays them; restarts reopen the data dir."""

from __future__ import annotations

from pathlib import Path

import pytest

from halfmq.broker.idempotence.principal_caps import PrincipalCaps
from halfmq.broker.idempotence.producer_ids import SendKey, SentRef
from halfmq.broker.idempotence.producer_records import SendKind
from halfmq.broker.store.message_store import PutItem
from halfmq.broker.store.topics import TXN_STATE_TOPIC

from ..half_messages.fakes import FakeClock
from ..producer_transactions.test_coordinator import OWNER, Broker, init, run


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


TO_OUT = SendKey(SendKind.MESSAGES, "", "OUT")


def _numbered_send(b: Broker, txn, sequence: int, body: str) -> None:
    """What the send use case does: ask the window, write the message and its send record, remember where they are."""
    assert b.ids.sent_before(txn, sequence, TO_OUT) is None
    item = b.item(body)
    results, _ = b.store.put([item, b.ids.send_record(txn, sequence, [item])])
    b.ids.sent(txn, sequence, SentRef(SendKind.MESSAGES, results[0].commit_log_offset, 1))


def test_a_producer_id_idle_past_its_expiry_is_forgotten_and_a_used_one_is_kept(tmp_path: Path, clock: FakeClock) -> None:
    from halfmq.errors import UnknownProducerId

    b = Broker(tmp_path, clock)
    b.ids.producer_id_expiry_ms = 10_000
    idle, busy = run(b.ids.new_producer_id(OWNER)), run(b.ids.new_producer_id(OWNER))
    for second in range(12):
        clock.advance(1)
        _numbered_send(b, b.ids.sender(busy.producer_id, 0, OWNER), second, f"busy {second}")
    assert b.ids.expire_idle_producers() == 1
    with pytest.raises(UnknownProducerId):
        b.ids.sender(idle.producer_id, 0, OWNER)
    b.ids.sender(busy.producer_id, 0, OWNER)
    b.close()


def test_a_restart_rebuilds_a_producer_ids_window_and_its_idle_time_from_the_log(tmp_path: Path, clock: FakeClock) -> None:
    from halfmq.broker.idempotence.send_window import Verdict
    from halfmq.errors import UnknownProducerId

    b = Broker(tmp_path, clock)
    ids = run(b.ids.new_producer_id(OWNER))
    txn = b.ids.sender(ids.producer_id, 0, OWNER)
    for sequence in (1, 0, 3):  # 2 never arrived
        _numbered_send(b, txn, sequence, f"m{sequence}")
    b.close()
    clock.advance(3600)
    again = Broker(tmp_path, clock)
    txn = again.ids.sender(ids.producer_id, 0, OWNER)
    assert (txn.sends.high, sorted(txn.sends.answers)) == (1, [0, 1, 3])
    assert txn.sends.decide(2) is Verdict.STORE and txn.sends.decide(3) is Verdict.REPEAT
    assert run(again.ids.new_producer_id(OWNER)).producer_id != ids.producer_id  # ids are never handed out twice
    again.close()
    clock.advance(25 * 3600)  # past a day without a send: gone after the next restart too
    third = Broker(tmp_path, clock)
    with pytest.raises(UnknownProducerId):
        third.ids.sender(ids.producer_id, 0, OWNER)
    third.close()


def test_a_producer_id_is_random_and_only_its_owner_numbers_sends_with_it_even_after_a_restart(tmp_path: Path, clock: FakeClock) -> None:
    from halfmq.errors import ProducerIdNotOwned

    b = Broker(tmp_path, clock)
    ids = [run(b.ids.new_producer_id(OWNER)).producer_id for _ in range(3)]
    tid_pid, _ = init(b, "t1")
    assert len({*ids, tid_pid}) == 4 and all(0 < pid < 2**63 for pid in ids) and max(ids) > 2**32
    for pid in (ids[0], tid_pid):
        with pytest.raises(ProducerIdNotOwned):
            b.ids.sender(pid, 0, "mallory")
        assert b.ids.sender(pid, 0, OWNER).producer_id == pid
    b.close()
    again = Broker(tmp_path, clock)
    for pid in (ids[0], tid_pid):
        with pytest.raises(ProducerIdNotOwned):
            again.ids.sender(pid, 0, "mallory")
        again.ids.sender(pid, 0, OWNER)
    again.txns.check_acting("t1", OWNER)
    with pytest.raises(ProducerIdNotOwned):
        again.txns.check_acting("t1", "mallory")  # the steps of t1's transactions too
    again.txns.check_acting("no-such-tid", "mallory")  # unknown: the step itself answers UNKNOWN_TRANSACTIONAL_ID
    run(again.txns.init("t1", None, "mallory"))  # a principal allowed on the transactional id initialises it anew
    with pytest.raises(ProducerIdNotOwned):
        again.ids.sender(tid_pid, 1, OWNER)  # the id is now the new instance's (the old epoch is fenced anyway)
    with pytest.raises(ProducerIdNotOwned):
        again.txns.check_acting("t1", OWNER)
    again.ids.sender(tid_pid, 1, "mallory")
    again.close()


def test_a_producer_id_handed_out_before_ids_were_bound_is_unknown_so_the_sdk_takes_a_new_one(tmp_path: Path, clock: FakeClock) -> None:
    from halfmq.broker.idempotence import producer_records as rec
    from halfmq.errors import UnknownProducerId

    b = Broker(tmp_path, clock)
    legacy = {rec.TXN_ID: "", rec.TXN_OP: "init", rec.PRODUCER_ID: "7", rec.EPOCH: "0", rec.TXN_NO: "0", rec.TIMEOUT_MS: "0"}
    b.store.put([PutItem(TXN_STATE_TOPIC, 0, b"", legacy), PutItem(TXN_STATE_TOPIC, 0, b"", {**legacy, rec.TXN_ID: "t1",
                                                                                             rec.PRODUCER_ID: "8"})])
    b.close()  # what an older broker wrote: no OWNER
    again = Broker(tmp_path, clock)
    for principal in (OWNER, "anonymous"):
        for pid in (7, 8):
            with pytest.raises(UnknownProducerId):
                again.ids.sender(pid, 0, principal)
        again.txns.check_acting("t1", principal)  # its steps are the transactional-id policy's to allow
    run(again.txns.init("t1", None, OWNER))  # the next init binds it
    again.ids.sender(8, 1, OWNER)
    again.close()


def test_a_number_is_answered_from_the_window_only_for_the_same_request_even_after_a_restart(tmp_path: Path, clock: FakeClock) -> None:
    from halfmq.errors import SequenceNumberReused

    b = Broker(tmp_path, clock)
    pid = run(b.ids.new_producer_id(OWNER)).producer_id
    txn = b.ids.sender(pid, 0, OWNER)
    _numbered_send(b, txn, 0, "m0")  # a plain send to OUT
    plain, half = SendKey(SendKind.MESSAGES, "", "OUT"), SendKey(SendKind.HALF, "pg", "OUT")
    assert [r.msg_id for r in b.ids.sent_before(txn, 0, plain)] == ["m0"]
    for other in (half, SendKey(SendKind.MESSAGES, "", "IN")):
        with pytest.raises(SequenceNumberReused):
            b.ids.sent_before(txn, 0, other)
    assert b.ids.sent_before(txn, 1, half) is None  # a new number: store it
    b.close()
    again = Broker(tmp_path, clock)
    txn = again.ids.sender(pid, 0, OWNER)
    for other in (half, SendKey(SendKind.MESSAGES, "", "IN")):  # the key is read back from the stored messages
        with pytest.raises(SequenceNumberReused):
            again.ids.sent_before(txn, 0, other)
    assert [r.msg_id for r in again.ids.sent_before(txn, 0, plain)] == ["m0"]
    again.close()


def test_a_principal_past_its_cap_of_producer_ids_is_refused_until_its_least_recently_used_one_has_idled(tmp_path: Path,
                                                                                                         clock: FakeClock) -> None:
    from halfmq.errors import TooManyProducerIds, UnknownProducerId

    b = Broker(tmp_path, clock, caps=PrincipalCaps(producer_ids=3, evictable_after_ms=60_000))
    first, second, third = (run(b.ids.new_producer_id(OWNER)).producer_id for _ in range(3))
    clock.advance(30)
    _numbered_send(b, b.ids.sender(first, 0, OWNER), 0, "first is busy")  # second is now the least recently used
    end = b.store.commit_log.end_offset
    with pytest.raises(TooManyProducerIds) as refused:
        run(b.ids.new_producer_id(OWNER))
    assert (refused.value.status, refused.value.retry_after, b.store.commit_log.end_offset) == (429, 30, end)
    run(b.ids.new_producer_id("mallory"))  # another principal is not held back
    clock.advance(30)
    fourth = run(b.ids.new_producer_id(OWNER)).producer_id  # second idled a minute: forgotten for it
    with pytest.raises(UnknownProducerId):
        b.ids.sender(second, 0, OWNER)
    for pid in (first, third, fourth):
        b.ids.sender(pid, 0, OWNER)
    assert list(b.ids.holdings(OWNER).alone) == [first, third, fourth]
    b.close()


def test_a_new_number_past_its_principals_cap_of_remembered_numbers_is_refused_before_anything_is_stored(tmp_path: Path,
                                                                                                        clock: FakeClock) -> None:
    from halfmq.errors import SendWindowsFull

    b = Broker(tmp_path, clock, caps=PrincipalCaps(sequences=8, evictable_after_ms=60_000), send_window=4)
    busy, other = (run(b.ids.new_producer_id(OWNER)).producer_id for _ in range(2))
    for n in range(6):
        _numbered_send(b, b.ids.sender(busy, 0, OWNER), n, f"busy {n}")  # its window remembers its last 4
    for n in range(4):
        _numbered_send(b, b.ids.sender(other, 0, OWNER), n, f"other {n}")
    assert b.ids.holdings(OWNER).sequences == 8
    _numbered_send(b, b.ids.sender(busy, 0, OWNER), 6, "busy 6")  # in order: one remembered, one forgotten
    with pytest.raises(SendWindowsFull) as refused:  # out of order: one more to remember, and busy sent a moment ago
        b.ids.sent_before(b.ids.sender(other, 0, OWNER), 5, TO_OUT)
    assert (refused.value.status, refused.value.retry_after, b.ids.holdings(OWNER).sequences) == (429, 60, 8)
    clock.advance(60)
    assert b.ids.sent_before(b.ids.sender(other, 0, OWNER), 5, TO_OUT) is None  # busy idled a minute: forgotten for it
    assert list(b.ids.holdings(OWNER).alone) == [other] and b.ids.holdings(OWNER).sequences == 4
    b.close()


def test_a_transactional_ids_new_epoch_no_longer_counts_what_its_fenced_window_remembered(tmp_path: Path, clock: FakeClock) -> None:
    b = Broker(tmp_path, clock)
    pid, epoch = init(b, "t1")
    for n in range(5):
        _numbered_send(b, b.ids.sender(pid, epoch, OWNER), n, f"m{n}")
    assert b.ids.holdings(OWNER).sequences == 5
    init(b, "t1")
    assert b.ids.holdings(OWNER).sequences == 0
    b.close()


def test_a_restart_brings_back_the_ids_and_numbers_each_principal_held_within_its_caps(tmp_path: Path, clock: FakeClock) -> None:
    caps = PrincipalCaps(producer_ids=3, sequences=64, evictable_after_ms=60_000)

    def held(b: Broker) -> dict[int, list[int]]:
        return {pid: sorted(p.sends.answers) for pid, p in b.ids.holdings(OWNER).alone.items()}

    b = Broker(tmp_path, clock, caps=caps, send_window=8)
    pids = []
    for i in range(6):
        pids.append(run(b.ids.new_producer_id(OWNER)).producer_id)  # from the fourth on, each forgets the oldest
        for n in (0, 1, 3):
            _numbered_send(b, b.ids.sender(pids[-1], 0, OWNER), n, f"{i}/{n}")
        clock.advance(61)
    tid_pid, epoch = init(b, "t1")
    _numbered_send(b, b.ids.sender(tid_pid, epoch, OWNER), 0, "t1/0")
    before, sequences = held(b), b.ids.holdings(OWNER).sequences
    assert list(before) == pids[3:] and sequences == 3 * 3 + 1
    b.close()
    again = Broker(tmp_path, clock, caps=caps, send_window=8)
    assert held(again) == before and again.ids.holdings(OWNER).sequences == sequences
    again.close()
