from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

from halfmq.broker.store import key_index
from halfmq.broker.store.indexed_keys import TXN_SCOPE, index_keys, raw_index_keys, raw_keys, record_keys
from halfmq.broker.store.message_store import MessageStore, PutItem, StoreConfig
from halfmq.broker.store.record import encode_properties


def open_store(path: Path, clock=None, **kw) -> MessageStore:
    config = StoreConfig(path, **{"segment_bytes": 1 << 16, "index_slots": 64, "index_entries": 32, **kw})
    return MessageStore(config) if clock is None else MessageStore(config, clock)


def send(store: MessageStore, body: bytes, **props: str) -> int:
    results, end = store.put([PutItem("T", 0, body, dict(props))])
    store.wait_flushed(end).result(5)
    return results[0].commit_log_offset


def bodies(store: MessageStore, key: str, scope: str = "T", **kw) -> list[bytes]:
    return [m.body for m in store.keys.query(scope, key, **kw)]


def test_a_message_is_found_by_its_id_and_by_each_key_newest_first(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    store.create_topic("T", 1)
    send(store, b"first", UNIQ_KEY="id-1", KEYS="order-7 user-3")
    send(store, b"other", UNIQ_KEY="id-2", KEYS="order-8")
    send(store, b"second", UNIQ_KEY="id-3", KEYS="order-7")
    assert bodies(store, "id-1") == [b"first"]
    assert bodies(store, "user-3") == [b"first"]
    assert bodies(store, "order-7") == [b"second", b"first"]
    assert bodies(store, "order-7", limit=1) == [b"second"]
    assert bodies(store, "nothing") == []
    store.close()


def test_a_query_keeps_only_the_records_stored_within_its_time_range(tmp_path: Path) -> None:
    now = [1_000.0]
    store = open_store(tmp_path, clock=lambda: now[0])
    store.create_topic("T", 1)
    send(store, b"old", KEYS="k")
    now[0] = 1_100.0
    send(store, b"new", KEYS="k")
    assert bodies(store, "k", since_ms=1_050_000) == [b"new"]
    assert bodies(store, "k", until_ms=1_050_000) == [b"old"]
    store.close()


def test_the_index_rolls_to_a_new_file_when_one_is_full_and_still_finds_every_record(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    store.create_topic("T", 1)
    for i in range(50):
        send(store, f"m{i}".encode(), UNIQ_KEY=f"id-{i}", KEYS="same")
    assert len(list((tmp_path / "index").iterdir())) >= 2
    assert bodies(store, "id-3") == [b"m3"]
    assert bodies(store, "same", limit=100) == [f"m{i}".encode() for i in reversed(range(50))]
    store.close()


def test_records_written_after_the_last_checkpoint_are_found_after_kill_9(tmp_path: Path) -> None:
    store = open_store(tmp_path, checkpoint_interval=3600)
    store.create_topic("T", 1)
    send(store, b"before", KEYS="k")
    store.checkpoint()
    saved = tmp_path.parent / "saved"
    shutil.copytree(tmp_path / "index", saved / "index")
    shutil.copy(tmp_path / "checkpoint.json", saved / "checkpoint.json")
    send(store, b"after", KEYS="k")
    store.close()
    # kill -9 then lost pages: the index and the checkpoint are as the last checkpoint left them
    shutil.rmtree(tmp_path / "index")
    shutil.copytree(saved / "index", tmp_path / "index")
    shutil.copy(saved / "checkpoint.json", tmp_path / "checkpoint.json")
    reopened = open_store(tmp_path)
    assert bodies(reopened, "k") == [b"after", b"before"]
    reopened.close()


def test_two_keys_with_the_same_hash_are_told_apart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(key_index, "_crc32c", lambda data, start=0: 7)  # every key collides, whatever its scope
    store = open_store(tmp_path)
    store.create_topic("T", 1)
    send(store, b"a", KEYS="order-1")
    send(store, b"b", KEYS="order-2")
    assert bodies(store, "order-1") == [b"a"]
    assert bodies(store, "order-2") == [b"b"]
    store.close()


def test_a_tail_cut_by_a_new_leader_is_not_found_and_what_replaces_it_is(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    store.create_topic("T", 1)
    send(store, b"kept", KEYS="k")
    cut = send(store, b"cut", KEYS="k")
    store.truncate_log(cut)
    send(store, b"new", KEYS="k")
    assert bodies(store, "k") == [b"new", b"kept"]
    store.close()


def test_the_keys_read_from_raw_properties_are_the_keys_of_the_decoded_ones() -> None:
    props = {"TAGS": "t", "UNIQ_KEY": "id", "KEYS": "a b", "INDEX_KEYS": "b c", "TRANSACTION_ID": "tx"}
    assert raw_keys(encode_properties(props)) == record_keys(props) == ["id", "a", "b", "c"]
    assert raw_keys(encode_properties({"UNIQ_KEY": "only"})) == ["only"]
    assert raw_keys(b"") == []
    scoped = [("T", "id"), ("T", "a"), ("T", "b"), ("T", "c"), (TXN_SCOPE, "tx")]
    assert raw_index_keys("T", encode_properties(props)) == index_keys("T", props) == scoped
    half = {**props, "REAL_TOPIC": "ORDERS"}  # a half, a timer's copy, a dead letter: the message's own topic's scope
    assert raw_index_keys("RMQ_SYS_TRANS_HALF_TOPIC", encode_properties(half)) == index_keys("RMQ_SYS_TRANS_HALF_TOPIC", half) \
        == [("ORDERS", "id"), ("ORDERS", "a"), ("ORDERS", "b"), ("ORDERS", "c"), (TXN_SCOPE, "tx")]
    assert raw_index_keys("T", b"") == []


def test_entries_written_after_the_last_checkpoint_are_kept_when_a_kill_9_left_the_header_behind(tmp_path: Path) -> None:
    store = open_store(tmp_path / "a", index_slots=1, checkpoint_interval=3600)  # one chain: an overwrite would cut it
    store.create_topic("T", 1)
    send(store, b"m0", KEYS="k")
    store.checkpoint()
    for i in range(1, 4):
        send(store, f"m{i}".encode(), KEYS="k" if i % 2 else "other")
    shutil.copytree(tmp_path / "a", tmp_path / "b")  # what a kill -9 leaves: the entries written, the slots and header as checkpointed
    store.close()
    reopened = open_store(tmp_path / "b", index_slots=1)
    send(reopened, b"m4", KEYS="other")
    assert bodies(reopened, "k") == [b"m3", b"m1", b"m0"]
    assert bodies(reopened, "other") == [b"m4", b"m2"]
    reopened.close()


def test_a_disk_that_refuses_the_index_stops_it_but_not_the_store_and_the_next_start_indexes_the_rest(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = open_store(tmp_path)
    store.create_topic("T", 1)
    send(store, b"before", UNIQ_KEY="id-0")

    def full(fd: int, data: bytes, offset: int) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(key_index, "_pwrite", full)
    send(store, b"during", UNIQ_KEY="id-1")  # stored; its entry is in memory, and the checkpoint cannot write it
    store.checkpoint()
    assert isinstance(store.keys.refused, OSError)
    monkeypatch.undo()
    send(store, b"after", UNIQ_KEY="id-2")  # stored: the index stays stopped until the next start
    assert bodies(store, "id-2") == []
    store.close()
    store = open_store(tmp_path)
    assert bodies(store, "id-1") == [b"during"] and bodies(store, "id-2") == [b"after"] and bodies(store, "id-0") == [b"before"]
    store.close()


def test_one_put_larger_than_a_files_room_spills_into_the_next_file_and_every_record_is_found(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    store.create_topic("T", 1)
    results, end = store.put([PutItem("T", 0, f"m{i}".encode(), {"UNIQ_KEY": f"id-{i}", "KEYS": "same"}) for i in range(40)])
    store.wait_flushed(end).result(5)
    assert len([p for p in (tmp_path / "index").iterdir() if p.name.isdigit()]) == 3  # 80 entries, 32 a file
    assert bodies(store, "id-0") == [b"m0"] and bodies(store, "id-39") == [b"m39"]
    assert bodies(store, "same", limit=100) == [f"m{i}".encode() for i in reversed(range(40))]
    store.close()
    reopened = open_store(tmp_path)
    assert bodies(reopened, "id-17") == [b"m17"]
    reopened.close()


def test_a_query_while_puts_and_checkpoints_run_only_ever_sees_whole_chains(tmp_path: Path) -> None:
    store = open_store(tmp_path, index_slots=4, index_entries=5_000, checkpoint_interval=0.01)
    store.create_topic("T", 1)
    done = threading.Event()
    seen: list[list[bytes]] = []

    def query() -> None:
        while not done.is_set():
            seen.append(bodies(store, "k", limit=10_000))

    reader = threading.Thread(target=query)
    reader.start()
    for i in range(300):
        store.put([PutItem("T", 0, f"{i:04d}".encode(), {"KEYS": "k"}), PutItem("T", 0, b"other", {"KEYS": "j"})])
    done.set()
    reader.join()
    assert seen and all(found == sorted(found, reverse=True) and found[-1:] in ([], [b"0000"]) for found in seen)  # no chain cut short
    assert bodies(store, "k", limit=10_000) == [f"{i:04d}".encode() for i in reversed(range(300))]
    store.close()


def test_a_key_is_found_only_in_its_own_topic_s_scope_so_another_topic_s_messages_cannot_bury_it(tmp_path: Path) -> None:
    store = open_store(tmp_path, index_entries=4096)
    store.create_topic("T", 1)
    store.create_topic("MALLORY", 1)
    send(store, b"victim", UNIQ_KEY="victim-id", KEYS="order-7")
    store.put([PutItem("MALLORY", 0, b"squat", {"UNIQ_KEY": f"s-{i}", "KEYS": "order-7 victim-id"}) for i in range(300)])
    assert bodies(store, "order-7", limit=1) == [b"victim"]
    assert bodies(store, "victim-id") == [b"victim"]
    assert len(bodies(store, "order-7", scope="MALLORY", limit=1000)) == 300
    assert [m.body for m in store.keys.query("T", "victim-id", limit=1)] == [b"victim"]
    store.close()


def test_a_transaction_id_is_found_in_the_transactions_scope_and_a_key_spelling_it_is_not(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    store.create_topic("T", 1)
    store.put([PutItem("RMQ_SYS_TRANS_OP_HALF_TOPIC", 0, b"op", {"TRANSACTION_ID": "tx-1"})])
    send(store, b"forged", KEYS="tx-1")  # a producer may not set TRANSACTION_ID; a key with its text is only a key
    assert bodies(store, "tx-1", scope=TXN_SCOPE) == [b"op"]
    assert bodies(store, "tx-1") == [b"forged"]
    store.close()


def test_a_half_s_keys_are_found_in_its_real_topic_s_scope(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    store.create_topic("T", 1)
    store.put([PutItem("RMQ_SYS_TRANS_HALF_TOPIC", 0, b"half", {"UNIQ_KEY": "m-1", "REAL_TOPIC": "T", "TRANSACTION_ID": "tx-2"})])
    assert bodies(store, "m-1") == [b"half"] and bodies(store, "tx-2", scope=TXN_SCOPE) == [b"half"]
    assert bodies(store, "m-1", scope="RMQ_SYS_TRANS_HALF_TOPIC") == []
    store.close()


def test_a_scope_s_hashes_are_keyed_by_the_store_s_secret_so_no_one_can_aim_a_key_at_another_scope_s_slot(tmp_path: Path) -> None:
    one, two = open_store(tmp_path / "one"), open_store(tmp_path / "two")
    assert one.keys.scoped_hash("T", "k") != one.keys.scoped_hash("MALLORY", "k")
    assert one.keys.scoped_hash("T", "k") != two.keys.scoped_hash("T", "k")  # each store its own secret
    assert len((tmp_path / "one" / "index" / key_index.SECRET).read_bytes()) == 32
    before = one.keys.scoped_hash("T", "k")
    one.close()
    reopened = open_store(tmp_path / "one")
    assert reopened.keys.scoped_hash("T", "k") == before  # kept across restarts with the files it hashed
    reopened.close()
    two.close()


def write_format_0_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a broker before issue 42 left: unscoped crc32c(key) hashes, format 0 in the header, no secret."""
    with monkeypatch.context() as m:
        m.setattr(key_index, "FORMAT", 0)
        m.setattr(key_index.KeyIndex, "scoped_hash", lambda self, scope, key: key_index._crc32c(key.encode()))
        m.setattr(key_index.KeyIndex, "_tweak", lambda self, scope: 0)
        store = open_store(tmp_path)
        store.create_topic("T", 1)
        store.create_topic("MALLORY", 1)
        send(store, b"old-1", UNIQ_KEY="id-1", KEYS="k")
        store.put([PutItem("MALLORY", 0, b"squat", {"UNIQ_KEY": "s", "KEYS": "k id-1"})])
        send(store, b"old-2", UNIQ_KEY="id-2", KEYS="k")
        store.close()
    (tmp_path / "index" / key_index.SECRET).unlink()


def test_an_index_of_the_older_format_is_read_with_its_own_hash_scopes_checked_and_new_entries_go_to_a_new_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    write_format_0_index(tmp_path, monkeypatch)
    store = open_store(tmp_path)
    assert store.recovery.scanned_from == store.commit_log.end_offset and "cannot be read" not in caplog.text  # no scan
    assert bodies(store, "k") == [b"old-2", b"old-1"] and bodies(store, "id-1") == [b"old-1"]
    assert bodies(store, "k", scope="MALLORY") == [b"squat"]
    send(store, b"new", KEYS="k")
    assert len([p for p in (tmp_path / "index").iterdir() if p.name.isdigit()]) == 2
    store.close()
    reopened = open_store(tmp_path)
    assert bodies(reopened, "k") == [b"new", b"old-2", b"old-1"]
    assert [f.format for f in reopened.keys._files] == [key_index.UNSCOPED, key_index.FORMAT]
    reopened.close()


def test_an_index_whose_secret_is_gone_is_indexed_again_rather_than_read_with_hashes_it_cannot_match(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = open_store(tmp_path)
    store.create_topic("T", 1)
    send(store, b"m", UNIQ_KEY="id-1")
    store.close()
    (tmp_path / "index" / key_index.SECRET).unlink()
    reopened = open_store(tmp_path)
    assert "cannot be read" in caplog.text and reopened.recovery.scanned_from == 0
    assert bodies(reopened, "id-1") == [b"m"]
    reopened.close()


def test_a_lookup_walks_at_most_max_files_index_files_newest_first(tmp_path: Path) -> None:
    store = open_store(tmp_path, index_filter_bits=0)  # 32 entries a file; no filters: every file in range is walked
    store.create_topic("T", 1)
    for i in range(100):
        send(store, f"m{i}".encode(), UNIQ_KEY=f"id-{i}", KEYS="same")
    assert len([p for p in (tmp_path / "index").iterdir() if p.name.isdigit()]) == 7
    assert bodies(store, "id-0") == [b"m0"]
    assert bodies(store, "id-0", max_files=6) == []  # in the oldest file: past the bound
    assert bodies(store, "id-99", max_files=1) == [b"m99"]
    assert len(bodies(store, "same", limit=1000, max_files=2)) < 40
    store.close()


def test_a_put_writing_out_its_entries_while_the_checkpoint_does_loses_none_of_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two write_outs at once (a put past the pending limit, the checkpoint) each cut what they wrote from ``pending``:
    entries added meanwhile were lost and the rest written off their slots (1,000 of 1M lookups failed after a fill)."""
    store = open_store(tmp_path, index_slots=1024, index_entries=10_000, checkpoint_interval=3600)
    store.create_topic("T", 1)
    send(store, b"m0", UNIQ_KEY="id-0")
    current = store.keys._files[-1]
    entered, release = threading.Event(), threading.Event()
    real = key_index._pwrite

    def slow_first(fd: int, data: bytes, offset: int) -> int:
        if threading.current_thread().name == "first":
            entered.set()
            release.wait(5)
        return real(fd, data, offset)

    monkeypatch.setattr(key_index, "_pwrite", slow_first)
    first = threading.Thread(target=current.write_out, name="first")
    first.start()
    assert entered.wait(5)
    send(store, b"m1", UNIQ_KEY="id-1")
    second = threading.Thread(target=current.write_out, name="second")
    second.start()
    second.join(0.5)  # without one write_out at a time, it writes m0 and m1 and cuts both from pending now
    send(store, b"m2", UNIQ_KEY="id-2")
    release.set()
    first.join(5)
    second.join(5)
    store.keys.flush()
    assert [bodies(store, f"id-{i}") for i in range(3)] == [[b"m0"], [b"m1"], [b"m2"]]
    store.close()
    reopened = open_store(tmp_path, index_slots=1024, index_entries=10_000)
    assert [bodies(reopened, f"id-{i}") for i in range(3)] == [[b"m0"], [b"m1"], [b"m2"]]
    reopened.close()


def many_index_files(path: Path) -> MessageStore:
    store = open_store(path, index_slots=16, index_entries=16, checkpoint_interval=3600)
    store.create_topic("T", 1)
    for i in range(40):
        results, end = store.put([PutItem("T", 0, b"m%d-%d" % (i, j), {"UNIQ_KEY": f"id-{i}-{j}"}) for j in range(16)])
        store.wait_flushed(end).result(5)
    store.checkpoint()  # seals and writes the rolled files' filters
    return store


def walked_files(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    walked: list[Path] = []
    hits = key_index._IndexFile.hits

    def counting(self, *args):
        walked.append(self.path)
        return hits(self, *args)

    monkeypatch.setattr(key_index._IndexFile, "hits", counting)
    return walked


def test_a_rare_key_walks_only_the_files_whose_filter_may_hold_it_before_and_after_a_restart(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = many_index_files(tmp_path)
    files = len([p for p in (tmp_path / "index").iterdir() if p.name.isdigit()])
    assert files >= 40
    walked = walked_files(monkeypatch)
    for n in range(20):
        assert bodies(store, f"absent-{n}") == []
    assert len(walked) <= 20 * files // 4, f"{len(walked)} file walks for 20 absent keys over {files} files"
    walked.clear()
    assert bodies(store, "id-0-3", max_files=8) == [b"m0-3"]  # the oldest file: the ones ruled out count for nothing
    store.close()
    assert len(list((tmp_path / "index").glob("*" + key_index.FILTER_SUFFIX))) >= files - 2  # every sealed file's
    reopened = open_store(tmp_path, index_slots=16, index_entries=16)
    walked.clear()
    for n in range(20):
        assert bodies(reopened, f"absent-{n}") == []
    assert len(walked) <= 20 * files // 4
    assert bodies(reopened, "id-39-15") == [b"m39-15"]
    reopened.close()


def test_without_filters_every_file_in_range_is_walked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = open_store(tmp_path, index_slots=16, index_entries=16, index_filter_bits=0)
    store.create_topic("T", 1)
    for i in range(4):
        send(store, b"m%d" % i, UNIQ_KEY=f"id-{i}", KEYS=" ".join(f"k{i}-{j}" for j in range(15)))
    walked = walked_files(monkeypatch)
    assert bodies(store, "absent") == []
    assert len(walked) == len([p for p in (tmp_path / "index").iterdir() if p.name.isdigit()]) >= 4
    store.close()
