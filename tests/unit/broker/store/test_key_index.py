from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

from halfmq.broker.store import key_index
from halfmq.broker.store.key_index import raw_keys, record_keys
from halfmq.broker.store.message_store import MessageStore, PutItem, StoreConfig
from halfmq.broker.store.record import encode_properties


def open_store(path: Path, clock=None, **kw) -> MessageStore:
    config = StoreConfig(path, **{"segment_bytes": 1 << 16, "index_slots": 64, "index_entries": 32, **kw})
    return MessageStore(config) if clock is None else MessageStore(config, clock)


def send(store: MessageStore, body: bytes, **props: str) -> int:
    results, end = store.put([PutItem("T", 0, body, dict(props))])
    store.wait_flushed(end).result(5)
    return results[0].commit_log_offset


def bodies(store: MessageStore, key: str, **kw) -> list[bytes]:
    return [m.body for m in store.keys.query(key, **kw)]


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
    monkeypatch.setattr(key_index, "key_hash", lambda key: 7)  # every key collides
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
    assert raw_keys(encode_properties(props)) == record_keys(props) == ["id", "a", "b", "c", "tx"]
    assert raw_keys(encode_properties({"UNIQ_KEY": "only"})) == ["only"]
    assert raw_keys(b"") == []


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
    assert len(list((tmp_path / "index").iterdir())) == 3  # 80 entries, 32 a file
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
