from __future__ import annotations

import socket
from pathlib import Path

import pytest

from halfmq.cli.processes import child_process
from halfmq.cli.processes.child_process import ephemeral_low, free_port


def test_a_free_port_lies_below_the_ephemeral_range_where_no_outgoing_connection_can_take_it() -> None:
    low = ephemeral_low()
    ports = [free_port() for _ in range(50)]
    assert all(1024 <= p < low for p in ports)
    assert len(set(ports)) == 50  # never the same port twice in one process


def test_a_port_something_listens_on_is_passed_over(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        taken = listener.getsockname()[1]
        monkeypatch.setattr(child_process, "ephemeral_low", lambda: 60_000)
        candidates = iter([taken, taken, 47_123])
        monkeypatch.setattr(child_process.random, "randrange", lambda low, high: next(candidates))
        assert free_port() == 47_123


def test_the_ephemeral_range_defaults_to_linuxs_when_the_kernel_does_not_say(tmp_path: Path) -> None:
    (tmp_path / "range").write_text("40000\t60999\n")
    assert ephemeral_low(str(tmp_path / "range")) == 40000
    assert ephemeral_low(str(tmp_path / "missing")) == 32768
