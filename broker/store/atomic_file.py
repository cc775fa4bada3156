"""Durable small files: write a temp file, fsync it, rename over, fsync the directory."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import orjson

T = TypeVar("T")


class DamagedFile(Exception):
    """A metadata file is there but does not hold what it should (truncated, edited, not ours)."""

    def __init__(self, path: Path, reason: str, remedy: str = "") -> None:
        super().__init__(f"{path} is damaged ({reason})" + (f"; {remedy}" if remedy else ""))
        self.path = path
        self.reason = reason


def write_json(path: Path, data: Any) -> None:
    """Replace ``path`` whole or not at all; a failed write (a full disk) leaves no temp file holding space."""
    write_whole(path, json_bytes(data))


def json_bytes(data: Any) -> bytes:
    """What ``write_json`` writes for ``data`` (for a file written elsewhere first, then moved in: log_start.begin_at)."""
    return orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)


def write_whole(path: Path, data: bytes | Iterable[bytes]) -> None:
    """``write_json`` for any bytes, or chunks of them: whole or absent after a crash (temp file, fsync, rename,
    directory fsync)."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "wb") as fh:
            for chunk in [data] if isinstance(data, bytes) else data:
                fh.write(chunk)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def fsync_dir(path: Path) -> None:
    """Make the names in directory ``path`` durable (a rename or a new file is not, until its directory is fsynced)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_json(path: Path, default: T, parse: Callable[[Any], T] = lambda raw: raw, remedy: str = "") -> T:
    """``parse`` of the file's JSON, ``default`` when there is no file; DamagedFile when it cannot be read as such."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return default
    try:
        return parse(orjson.loads(data))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise DamagedFile(path, f"{type(exc).__name__}: {exc}", remedy) from None
