"""Durable small files: write a temp file, fsync it, rename over, fsync the directory."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson


def write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fh:
        fh.write(orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_json(path: Path, default: Any) -> Any:
    try:
        return orjson.loads(path.read_bytes())
    except FileNotFoundError:
        return default
