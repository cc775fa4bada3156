"""bench.machine: what a result was measured on, and a broker start timed without the bytecode compiler in it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from halfmq.bench import machine


def test_compile_bytecode_leaves_the_brokers_modules_with_current_bytecode() -> None:
    import halfmq.broker.config as config

    source = Path(config.__file__)
    cached = Path(importlib.util.cache_from_source(str(source)))
    cached.unlink(missing_ok=True)
    assert machine.compile_bytecode() >= 2  # halfmq's folder and the broker's at least
    header = cached.read_bytes()[8:16]
    # a .pyc is current when the source mtime it records is the source's
    assert int.from_bytes(header[:4], "little") == int(source.stat().st_mtime)
