"""HalfMessageService + CheckService on a real store, with a fake clock and scripted producer answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from halfmq.broker.half_messages.check_client import CheckOutcome
from halfmq.broker.half_messages.check_policy import CheckPolicy
from halfmq.broker.half_messages.check_service import CheckService
from halfmq.broker.half_messages.half_message_service import HalfMessageService
from halfmq.broker.half_messages.producer_registry import ProducerRegistry
from halfmq.broker.half_messages.state_machine import HalfEvent
from halfmq.broker.store.flush_waiter import FlushWaiter
from halfmq.broker.store.message_store import MessageStore, PutItem, StoreConfig
from halfmq.broker.store.record import StoredMessage
from halfmq.broker.store.topics import CHECK_MAX_TIME_TOPIC, HALF_TOPIC, OP_HALF_TOPIC, REAL_TOPIC, TIMER_OUT_MS, TIMER_TOPIC
from halfmq.broker.timers.routing import TIMER_DELAY_MS
from halfmq.errors import DamagedRecord, TransactionConflict, TransactionNotFound
from halfmq.wire import TransactionState

from .fakes import FakeClock, ScriptedCheckClient

POLICY = CheckPolicy(transaction_timeout=6, check_interval=5, check_max=3)


class Broker:
    """The transaction layer of one broker incarnation over a data dir."""

    def __init__(self, path: Path, clock: FakeClock, client: ScriptedCheckClient) -> None:
        self.store = MessageStore(StoreConfig(path), clock=clock)
        self.store.create_topic("ORDERS", 2)
        self.txs = HalfMessageService(self.store, POLICY, FlushWaiter(self.store, 5), clock=clock)
        self.registry = ProducerRegistry(None, expiry=120, clock=clock)
        self.checks = CheckService(self.txs, self.registry, client, POLICY, clock=clock)

    def half(self, body: str, group: str = "pg") -> str:
        tx, _ = self.txs.send_half(group, PutItem("ORDERS", 0, body.encode(), {"UNIQ_KEY": body}), 2)
        return tx.transaction_id

    def visible(self) -> list[bytes]:
        return [m.body for q in range(2) for m in self.store.reads.read_queue("ORDERS", q, 0, 10_000)]

    async def check_round(self, clock: FakeClock, seconds: float = 5.0) -> None:
        clock.advance(seconds)
        self.checks.run_once()
        await self.checks.wait_idle()

    def close(self) -> None:
        self.store.close()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def client() -> ScriptedCheckClient:
    return ScriptedCheckClient()


@pytest.fixture
def broker(tmp_path: Path, clock, client):
    b = Broker(tmp_path, clock, client)
    yield b
    b.close()


async def test_half_message_is_invisible_until_committed(broker: Broker) -> None:
    txid = broker.half("o1")
    assert broker.visible() == []
    assert broker.store.reads.queue_range(HALF_TOPIC, 0) == (0, 1)
    outcome = await broker.txs.end(txid, "pg", "commit")
    assert outcome.tx.state is TransactionState.COMMITTED and not outcome.duplicate
    assert broker.visible() == [b"o1"]


def test_the_half_kept_in_memory_for_its_end_is_exactly_what_the_log_holds(broker: Broker) -> None:
    tx, _ = broker.txs.send_half("pg", PutItem("ORDERS", 1, b"\x00bin", {"UNIQ_KEY": "u1", "KEYS": "k"}, binary=True, tag="t"), 2)
    logged = broker.store.reads.read_at(tx.half_clog_offset)
    assert broker.txs.half_message(tx) == logged
    assert logged.properties["REAL_QID"] == "1" and logged.binary


async def test_an_end_after_a_restart_reads_the_half_back_from_the_log(tmp_path: Path, clock, client) -> None:
    first = Broker(tmp_path, clock, client)
    txid = first.half("o1")
    first.close()
    second = Broker(tmp_path, clock, client)
    try:
        outcome = await second.txs.end(txid, "pg", "commit")
        assert outcome.half is not None and outcome.half.body == b"o1"
        assert second.visible() == [b"o1"]
    finally:
        second.close()


async def test_double_commit_appends_one_final_message_and_returns_the_first_result(broker: Broker) -> None:
    txid = broker.half("o1")
    first = await broker.txs.end(txid, "pg", "commit")
    second = await broker.txs.end(txid, "pg", "commit", from_check=True)
    assert second.duplicate and second.tx.final == first.tx.final
    assert broker.visible() == [b"o1"]


async def test_commit_after_rollback_is_a_conflict_and_writes_nothing(broker: Broker) -> None:
    txid = broker.half("o1")
    await broker.txs.end(txid, "pg", "rollback")
    end = broker.store.commit_log.end_offset
    with pytest.raises(TransactionConflict):
        await broker.txs.end(txid, "pg", "commit")
    assert broker.store.commit_log.end_offset == end
    assert broker.visible() == []


async def test_wrong_producer_group_and_unknown_transaction_are_refused(broker: Broker) -> None:
    txid = broker.half("o1")
    with pytest.raises(TransactionNotFound):  # another group's: answered as none at all
        await broker.txs.end(txid, "other", "commit")
    with pytest.raises(TransactionNotFound):
        await broker.txs.end("nope", "pg", "commit")
    assert broker.txs.get(txid).state is TransactionState.PENDING


async def test_unanswered_transaction_is_checked_and_committed_by_the_check(broker: Broker, clock, client) -> None:
    broker.registry.heartbeat("pg", "c1", "http://127.0.0.1:1/check")
    txid = broker.half("o1")
    await broker.check_round(clock, 5.9)
    assert client.calls == []  # younger than transaction_timeout
    client.script.append(CheckOutcome.COMMIT)
    await broker.check_round(clock, 0.2)
    assert len(client.calls) == 1
    assert client.calls[0][1]["message"]["topic"] == "ORDERS"
    assert broker.txs.get(txid).state is TransactionState.COMMITTED
    assert broker.visible() == [b"o1"]


async def test_unknown_answers_discard_after_check_max(broker: Broker, clock, client) -> None:
    broker.registry.heartbeat("pg", "c1", "http://127.0.0.1:1/check")
    txid = broker.half("o1")
    for _ in range(6):
        await broker.check_round(clock, 6)
    tx = broker.txs.get(txid)
    assert tx.state is TransactionState.DISCARDED
    assert tx.check_times == POLICY.check_max
    assert len(client.calls) == POLICY.check_max
    assert [m.body for m in broker.store.reads.read_queue(CHECK_MAX_TIME_TOPIC, 0, 0, 10)] == [b"o1"]
    assert broker.visible() == []


async def test_checks_that_reach_no_producer_do_not_count(broker: Broker, clock, client) -> None:
    txid = broker.half("o1")
    for _ in range(10):
        await broker.check_round(clock, 6)
    assert broker.txs.get(txid).check_times == 0
    assert broker.txs.get(txid).state is TransactionState.PENDING
    broker.registry.heartbeat("pg", "c1", "http://127.0.0.1:1/check")
    client.script.append(CheckOutcome.ROLLBACK)
    await broker.check_round(clock, 6)
    assert broker.txs.get(txid).state is TransactionState.ROLLED_BACK


async def test_state_and_check_counts_survive_a_restart(tmp_path: Path, clock, client) -> None:
    b = Broker(tmp_path, clock, client)
    b.registry.heartbeat("pg", "c1", "http://127.0.0.1:1/check")
    committed, rolled, pending = b.half("c"), b.half("r"), b.half("p")
    first = await b.txs.end(committed, "pg", "commit")
    await b.txs.end(rolled, "pg", "rollback")
    await b.check_round(clock, 6)  # two checks for "p", answered unknown
    await b.check_round(clock, 6)
    b.close()
    b = Broker(tmp_path, clock, client)
    try:
        assert b.txs.get(committed).state is TransactionState.COMMITTED
        assert b.txs.get(committed).final == first.tx.final
        assert b.txs.get(rolled).state is TransactionState.ROLLED_BACK
        assert b.txs.get(pending).state is TransactionState.PENDING
        assert b.txs.get(pending).check_times == 2
        again = await b.txs.end(committed, "pg", "commit")
        assert again.duplicate and b.visible() == [b"c"]
        with pytest.raises(TransactionConflict):
            await b.txs.end(rolled, "pg", "commit")
    finally:
        b.close()


async def test_discarded_transaction_can_be_resent_once(broker: Broker, clock, client) -> None:
    broker.registry.heartbeat("pg", "c1", "http://127.0.0.1:1/check")
    txid = broker.half("o1")
    for _ in range(5):
        await broker.check_round(clock, 6)
    from halfmq.broker.half_messages.state_machine import HalfEvent

    tx = broker.txs.get(txid)
    broker.txs.apply(tx, HalfEvent.RESEND)
    assert tx.state is TransactionState.COMMITTED and broker.visible() == [b"o1"]
    with pytest.raises(TransactionConflict):
        broker.txs.apply(tx, HalfEvent.RESEND)


async def test_check_storms_do_not_grow_the_half_queue(broker: Broker, clock, client) -> None:
    """RocketMQ re-appends the whole half message per check (#1519); halfmq writes one small op record."""
    broker.registry.heartbeat("pg", "c1", "http://127.0.0.1:1/check")
    big = "x" * 100_000
    txid = broker.half(big)
    for _ in range(20):
        await broker.check_round(clock, 6)
    from halfmq.broker.store.topics import OP_HALF_TOPIC

    assert broker.store.reads.queue_range(HALF_TOPIC, 0) == (0, 1)
    ops = broker.store.reads.read_queue(OP_HALF_TOPIC, 0, 0, 100)
    assert [op.properties["OP"] for op in ops] == ["check"] * POLICY.check_max + ["discard"]
    assert all(op.size < 1024 for op in ops), [op.size for op in ops]
    assert broker.txs.get(txid).state is TransactionState.DISCARDED


async def test_resend_survives_a_restart_and_is_not_offered_again(tmp_path: Path, clock, client) -> None:
    from halfmq.broker.half_messages.state_machine import HalfEvent

    b = Broker(tmp_path, clock, client)
    b.registry.heartbeat("pg", "c1", "http://127.0.0.1:1/check")
    txid = b.half("o1")
    for _ in range(5):
        await b.check_round(clock, 6)
    b.txs.apply(b.txs.get(txid), HalfEvent.RESEND)
    b.close()
    b = Broker(tmp_path, clock, client)
    try:
        assert b.txs.get(txid).state is TransactionState.COMMITTED
        assert b.txs.in_state(TransactionState.DISCARDED) == []
        assert b.visible() == [b"o1"]
    finally:
        b.close()


async def test_a_pending_transaction_sent_after_a_lost_log_tail_survives_the_next_restart(tmp_path: Path, clock, client) -> None:
    b = Broker(tmp_path, clock, client)
    first = b.half("o1")
    await b.txs.end(first, "pg", "commit")
    kept_end = b.store.commit_log.end_offset
    second = b.half("o2")
    await b.txs.end(second, "pg", "rollback")  # every half resolved: the checkpoint moves past both
    b.store.checkpoint()
    b.close()
    segment = sorted((tmp_path / "commitlog").iterdir())[-1]
    segment.write_bytes(segment.read_bytes()[:kept_end])  # o2's half and rollback are lost
    b = Broker(tmp_path, clock, client)
    pending = b.half("o3")
    b.close()
    b = Broker(tmp_path, clock, client)
    try:
        assert [tx.transaction_id for tx in b.txs.pending()] == [pending]
        await b.txs.end(pending, "pg", "commit")
        assert sorted(b.visible()) == [b"o1", b"o3"]
    finally:
        b.close()


def flip_last_byte_of(path: Path, record_offset: int, size: int) -> None:
    with open(path / "commitlog" / ("0" * 20), "r+b") as fh:
        fh.seek(record_offset + size - 1)
        byte = fh.read(1)[0]
        fh.seek(record_offset + size - 1)
        fh.write(bytes([byte ^ 0x01]))


async def test_a_damaged_half_is_passed_over_at_restart_and_the_other_transactions_recover(tmp_path: Path, clock, client) -> None:
    b = Broker(tmp_path, clock, client)
    ids = [b.half(f"o{i}") for i in range(3)]
    victim = b.txs.get(ids[1])
    size = b.store.reads.read_at(victim.half_clog_offset).size
    b.close()
    flip_last_byte_of(tmp_path, victim.half_clog_offset, size)
    b = Broker(tmp_path, clock, client)
    try:
        assert [tx.transaction_id for tx in b.txs.pending()] == [ids[0], ids[2]]
        assert b.store.damaged.count == 1
    finally:
        b.close()


async def test_a_request_needing_a_damaged_half_gets_a_damaged_record_error(broker: Broker, tmp_path: Path) -> None:
    txid = broker.half("o1")
    await broker.txs.end(txid, "pg", "commit")
    tx = broker.txs.get(txid)
    flip_last_byte_of(tmp_path, tx.half_clog_offset, broker.store.reads.read_at(tx.half_clog_offset).size)
    with pytest.raises(DamagedRecord, match=txid):
        broker.txs.half_message(tx)
    assert broker.visible() == [b"o1"]


async def test_a_pending_transaction_whose_half_is_damaged_can_still_be_rolled_back_not_committed(tmp_path: Path, clock, client) -> None:
    b = Broker(tmp_path, clock, client)
    txids = [b.half("o1"), b.half("o2")]
    b.close()
    b = Broker(tmp_path, clock, client)  # after a restart the halves are read back from the log
    try:
        tx = b.txs.get(txids[0])
        flip_last_byte_of(tmp_path, tx.half_clog_offset, b.store.reads.read_at(tx.half_clog_offset).size)
        b.registry.heartbeat("pg", "c1", "http://127.0.0.1:1/check")
        await b.check_round(clock, seconds=60)  # the check of the damaged one is skipped, not crashed
        assert [payload["transaction_id"] for _, payload in client.calls] == [txids[1]]
        with pytest.raises(DamagedRecord):
            await b.txs.end(txids[0], "pg", "commit")
        assert b.txs.get(txids[0]).state is TransactionState.PENDING
        outcome = await b.txs.end(txids[0], "pg", "rollback")
        assert outcome.tx.state is TransactionState.ROLLED_BACK
        assert [tx.transaction_id for tx in b.txs.pending()] == [txids[1]]
    finally:
        b.close()


async def test_a_producer_whose_check_raises_is_passed_over_for_the_next_one_of_its_group(broker: Broker, clock, client) -> None:
    broker.registry.heartbeat("pg", "a", "http://127.0.0.1:1/broken")  # first in the rotation
    broker.registry.heartbeat("pg", "b", "http://127.0.0.1:1/check")
    client.raising.add("http://127.0.0.1:1/broken")
    txid = broker.half("o1")
    client.script.append(CheckOutcome.COMMIT)
    await broker.check_round(clock, 6)
    assert [url for url, _ in client.calls] == ["http://127.0.0.1:1/broken", "http://127.0.0.1:1/check"]
    assert broker.txs.get(txid).state is TransactionState.COMMITTED


async def test_a_group_whose_only_producer_raises_keeps_its_transaction_pending_and_uncounted(broker: Broker, clock, client) -> None:
    broker.registry.heartbeat("pg", "a", "http://127.0.0.1:1/broken")
    client.raising.add("http://127.0.0.1:1/broken")
    txid = broker.half("o1")
    for _ in range(3):
        await broker.check_round(clock, 6)
    tx = broker.txs.get(txid)
    assert tx.state is TransactionState.PENDING and tx.check_times == 0
    assert len(client.calls) == 3  # asked again every round, not dropped from the schedule


async def test_a_failure_in_one_group_never_stops_the_check_round_for_the_others(tmp_path: Path, clock, client) -> None:
    # The hardening issue: the registry's snapshot failed when a producer of one group expired, the
    # exception left the check round, and the due transactions it had already taken were never checked.
    b = Broker(tmp_path, clock, client)
    try:
        snapshot = tmp_path / "producers.json"
        b.registry = ProducerRegistry(snapshot, expiry=10, clock=clock)
        b.checks = CheckService(b.txs, b.registry, client, POLICY, clock=clock)
        for group, cid in [("px", "x-stays"), ("px", "x-leaves"), ("py", "y")]:
            b.registry.heartbeat(group, cid, f"http://127.0.0.1:1/{cid}")
        first, second = b.half("o1", group="px"), b.half("o2", group="py")
        (tmp_path / "producers.json.tmp").mkdir()  # every snapshot from now on fails, as on a broken disk
        clock.advance(8)
        b.registry.heartbeat("px", "x-stays", "http://127.0.0.1:1/x-stays")
        b.registry.heartbeat("py", "y", "http://127.0.0.1:1/y")
        client.script.extend([CheckOutcome.COMMIT, CheckOutcome.COMMIT])
        await b.check_round(clock, 3)  # "x-leaves" expires during this round
        assert {b.txs.get(first).state, b.txs.get(second).state} == {TransactionState.COMMITTED}
    finally:
        b.close()


async def test_a_committed_transaction_leaves_records_in_rocketmqs_names(broker: Broker) -> None:
    txid = broker.half("o1", group="pg")
    await broker.txs.end(txid, "pg", "commit")
    [half] = broker.store.reads.read_queue(HALF_TOPIC, 0, 0, 10)
    [op] = broker.store.reads.read_queue(OP_HALF_TOPIC, 0, 0, 10)
    [final] = broker.store.reads.read_queue("ORDERS", 0, 0, 10)
    assert {k: half.properties[k] for k in ("REAL_TOPIC", "REAL_QID", "TRAN_MSG", "PGROUP", "TRANSACTION_ID")} == {
        "REAL_TOPIC": "ORDERS", "REAL_QID": "0", "TRAN_MSG": "true", "PGROUP": "pg", "TRANSACTION_ID": txid}
    assert {"OP", "TRANSACTION_ID", "PGROUP", "HALF_CLOG", "BORN_MS", "FINAL_SIZE"} <= op.properties.keys()
    assert (op.properties["OP"], op.properties["HALF_CLOG"]) == ("commit", str(half.commit_log_offset))
    assert not {"REAL_TOPIC", "REAL_QID"} & final.properties.keys() and final.properties["TRANSACTION_ID"] == txid


class Pushes:
    """A PushTransport fake: which groups hold a stream, and what was pushed."""

    def __init__(self, *groups: str) -> None:
        self.groups = set(groups)
        self.pushed: list[tuple[str, str, bytes]] = []

    def connected(self, group: str) -> bool:
        return group in self.groups

    def push(self, transaction_id: str, group: str, half) -> bool:
        self.pushed.append((transaction_id, group, half.body))
        return True


async def test_a_group_with_a_telemetry_stream_is_checked_by_a_push_not_over_http(broker: Broker, clock, client) -> None:
    broker.registry.heartbeat("pg", "c1", "http://127.0.0.1:1/check")
    broker.checks.push_transport = Pushes("pg")
    txid = broker.half("o1")
    await broker.check_round(clock, 6.1)
    assert broker.checks.push_transport.pushed == [(txid, "pg", b"o1")]
    assert client.calls == []
    tx = broker.txs.get(txid)
    assert (tx.state, tx.check_times, tx.last_answer) == (TransactionState.PENDING, 1, "pushed")
    await broker.txs.end(txid, "pg", "commit", from_check=True)  # the client's EndTransaction(SOURCE_SERVER_CHECK)
    assert broker.visible() == [b"o1"]


async def test_a_pushed_group_without_any_http_producer_still_counts_as_having_a_producer(broker: Broker, clock, client) -> None:
    broker.checks.push_transport = Pushes("pg")
    txid = broker.half("o1")
    for _ in range(6):
        await broker.check_round(clock, 6)
    assert broker.txs.get(txid).state is TransactionState.DISCARDED  # asked check_max times, never answered
    assert len(broker.checks.push_transport.pushed) == POLICY.check_max
    assert broker.checks.no_producer == 0


def test_end_unflushed_writes_the_end_and_leaves_the_fsync_wait_to_the_caller(broker: Broker) -> None:
    # A batch end applies each item this way, then waits once for the largest end offset.
    first, second = broker.half("b1"), broker.half("b2")
    committed = broker.txs.end_unflushed(first, "pg", "commit")
    rolled_back = broker.txs.end_unflushed(second, "pg", "rollback")
    assert (committed.tx.state, rolled_back.tx.state) == (TransactionState.COMMITTED, TransactionState.ROLLED_BACK)
    assert rolled_back.tx.end_offset > committed.tx.end_offset > 0
    assert broker.visible() == [b"b1"]
    with pytest.raises(TransactionNotFound):
        broker.txs.end_unflushed(first, "other", "rollback")


# --- several messages, one local transaction (halfmq's ``also``) ---------------------------------------------------


def _companions(broker: Broker, body: str, *also: PutItem) -> str:
    broker.store.create_topic("PAYMENT_DUE", 2)
    tx, _ = broker.txs.send_half("pg", PutItem("ORDERS", 0, body.encode(), {"UNIQ_KEY": body}), 2, also=list(also))
    return tx.transaction_id


def _due(body: str, delay_ms: int) -> PutItem:
    return PutItem("PAYMENT_DUE", 1, body.encode(), {"UNIQ_KEY": body, TIMER_DELAY_MS: str(delay_ms)})


def _group_of(store: MessageStore, first: StoredMessage) -> list[StoredMessage]:
    """The write group that starts at ``first``, read record by record from the log (FLAG_GROUP_MORE on all but the last)."""
    group, record = [first], first
    while record.group_more:
        record = store.reads.read_at(record.commit_log_offset + record.size)
        group.append(record)
    return group


async def test_a_half_with_a_delayed_companion_commits_both_in_one_group_the_companion_due_relative_to_the_commit(
        broker: Broker, clock: FakeClock) -> None:
    txid = _companions(broker, "o1", _due("o1-due", 30_000))
    halves = broker.store.reads.read_queue(HALF_TOPIC, 0, 0, 10)
    assert [(h.properties["HALF_PART"], h.properties["TRANSACTION_ID"]) for h in halves] == [("1/2", txid), ("2/2", txid)]
    assert [h.body for h in _group_of(broker.store, halves[0])] == [b"o1", b"o1-due"]  # one write group
    clock.advance(100)
    committed_at = int(clock() * 1000)
    outcome = await broker.txs.end(txid, "pg", "commit")
    [final] = broker.store.reads.read_queue("ORDERS", 0, 0, 10)
    assert [r.topic for r in _group_of(broker.store, final)] == ["ORDERS", TIMER_TOPIC, OP_HALF_TOPIC]
    [timer] = broker.store.reads.read_queue(TIMER_TOPIC, 0, 0, 10)
    assert (timer.body, timer.properties[REAL_TOPIC], timer.properties[TIMER_OUT_MS]) == (b"o1-due", "PAYMENT_DUE", str(committed_at + 30_000))
    assert "HALF_PART" not in final.properties and "HALF_PART" not in timer.properties
    assert timer.properties["TRANSACTION_ID"] == final.properties["TRANSACTION_ID"] == txid
    assert outcome.tx.final is not None and (outcome.tx.final.topic, outcome.tx.final.msg_id) == ("ORDERS", "o1")
    assert broker.store.reads.read_queue("PAYMENT_DUE", 1, 0, 10) == []  # not before it is due


async def test_a_rollback_of_a_half_with_companions_delivers_neither(broker: Broker) -> None:
    txid = _companions(broker, "o1", _due("o1-due", 1_000), PutItem("PAYMENT_DUE", 0, b"o1-now", {"UNIQ_KEY": "o1-now"}))
    await broker.txs.end(txid, "pg", "rollback")
    assert broker.visible() == []
    assert [broker.store.reads.read_queue(t, q, 0, 10) for t, q in (("PAYMENT_DUE", 0), ("PAYMENT_DUE", 1), (TIMER_TOPIC, 0))] == [[], [], []]


async def test_a_rebuild_keeps_the_parts_of_a_pending_half_together_and_a_check_back_shows_the_first(
        tmp_path: Path, clock: FakeClock, client: ScriptedCheckClient) -> None:
    b = Broker(tmp_path, clock, client)
    txid = _companions(b, "o1", PutItem("PAYMENT_DUE", 0, b"o1-now", {"UNIQ_KEY": "o1-now"}), _due("o1-due", 5_000))
    b.close()
    b = Broker(tmp_path, clock, client)
    try:
        assert [tx.transaction_id for tx in b.txs.pending()] == [txid]  # one transaction, not one per half
        assert [h.body for h in b.txs.half_parts(b.txs.get(txid))] == [b"o1", b"o1-now", b"o1-due"]
        b.registry.heartbeat("pg", "c1", "http://127.0.0.1:1/check")
        client.script.append(CheckOutcome.COMMIT)
        await b.check_round(clock, 7)
        [(_, payload)] = client.calls
        assert payload["message"]["body"] == "o1" and payload["message"]["topic"] == "ORDERS"
        assert b.txs.get(txid).state is TransactionState.COMMITTED
        assert b.visible() == [b"o1"] and [m.body for m in b.store.reads.read_queue("PAYMENT_DUE", 0, 0, 10)] == [b"o1-now"]
        assert [m.body for m in b.store.reads.read_queue(TIMER_TOPIC, 0, 0, 10)] == [b"o1-due"]
    finally:
        b.close()


async def test_a_discarded_half_with_companions_is_resent_whole_after_a_restart(
        tmp_path: Path, clock: FakeClock, client: ScriptedCheckClient) -> None:
    b = Broker(tmp_path, clock, client)
    txid = _companions(b, "o1", PutItem("PAYMENT_DUE", 0, b"o1-now", {"UNIQ_KEY": "o1-now"}))
    b.registry.heartbeat("pg", "c1", "http://127.0.0.1:1/check")
    for _ in range(6):
        await b.check_round(clock, 6)
    assert b.txs.get(txid).state is TransactionState.DISCARDED
    b.close()
    b = Broker(tmp_path, clock, client)
    try:
        b.txs.apply(b.txs.get(txid), HalfEvent.RESEND, note="operator")
        assert b.visible() == [b"o1"] and [m.body for m in b.store.reads.read_queue("PAYMENT_DUE", 0, 0, 10)] == [b"o1-now"]
    finally:
        b.close()
