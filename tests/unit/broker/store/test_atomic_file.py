from __future__ import annotations

from pathlib import Path

import pytest

from halfmq.broker.store.atomic_file import DamagedFile, read_json, write_json
from tests.support.small_disk import SmallDisk


def test_a_missing_file_reads_as_the_default(tmp_path: Path) -> None:
    assert read_json(tmp_path / "none.json", {"a": 1}) == {"a": 1}


@pytest.mark.parametrize("content", [b"", b'{"topics": {"T": {"queu', b"[1, 2]"])
def test_a_truncated_or_foreign_file_is_damaged_naming_the_file_and_the_remedy(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "topics.json"
    path.write_bytes(content)
    with pytest.raises(DamagedFile) as caught:
        read_json(path, {}, lambda raw: raw["topics"], remedy="restore it")
    assert str(path) in str(caught.value) and str(caught.value).endswith("; restore it")


def test_a_write_the_disk_refuses_keeps_the_old_file_and_leaves_no_temp_file(small_disk: SmallDisk) -> None:
    path = small_disk.path / "meta.json"
    write_json(path, {"v": 1})
    small_disk.fill()
    with pytest.raises(OSError):
        write_json(path, {"v": 2, "pad": "x" * 10_000})
    assert read_json(path, None) == {"v": 1}
    assert sorted(p.name for p in small_disk.path.iterdir()) == ["filler", "meta.json"]
