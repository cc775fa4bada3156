"""The write gate: why the store refuses writes now (closed, read-only until a restart, the disk refused the last one)."""

from __future__ import annotations

import errno

import pytest

from halfmq.broker.store.store_types import StoreClosed, StoreNotWritable
from halfmq.broker.store.write_gate import WriteGate

FULL = OSError(errno.ENOSPC, "No space left on device")


def test_an_open_gate_takes_writes_and_names_no_problem() -> None:
    gate = WriteGate()
    gate.check()
    assert gate.problem is None


def test_a_closed_gate_refuses_every_write() -> None:
    gate = WriteGate()
    gate.closed = True
    with pytest.raises(StoreClosed):
        gate.check()


def test_a_read_only_gate_refuses_writes_with_its_reason_even_after_a_write_succeeds() -> None:
    gate = WriteGate()
    gate.stop_writes("recovery could not rebuild the consume queues")
    gate.succeeded()
    with pytest.raises(StoreNotWritable, match="read-only: recovery could not rebuild the consume queues"):
        gate.check()
    assert gate.problem == "recovery could not rebuild the consume queues"


def test_a_write_the_disk_refused_is_the_problem_until_one_succeeds_but_does_not_stop_the_next_attempt() -> None:
    gate = WriteGate()
    refused = gate.refused("cannot append messages", FULL)
    assert isinstance(refused, StoreNotWritable)
    assert str(refused) == "cannot append messages: No space left on device"
    gate.check()  # the next write may try: the disk may have room again
    assert gate.problem == f"cannot append messages: {FULL}"
    gate.succeeded()
    assert gate.problem is None


def test_the_first_failed_fsync_makes_the_gate_read_only_and_a_later_one_keeps_its_reason() -> None:
    gate = WriteGate()
    gate.fsync_failed(OSError(errno.EIO, "first"))
    gate.fsync_failed(OSError(errno.EIO, "second"))
    assert gate.read_only is not None
    assert "first" in gate.read_only and "second" not in gate.read_only
    with pytest.raises(StoreNotWritable, match="an fsync of the commit log failed"):
        gate.check()
