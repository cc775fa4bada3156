"""The cork the broker's hot path puts around an answer: head and body leave in one write."""

from __future__ import annotations

from typing import Any

from halfmq.broker.serving.uvicorn_head_limits import CorkedTransport


class RecordingTransport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed


def corked(inner: RecordingTransport) -> Any:
    return CorkedTransport(inner)  # type: ignore[arg-type]


def test_writes_go_through_at_once_when_not_corked() -> None:
    inner = RecordingTransport()
    corked(inner).write(b"HTTP/1.1 100 Continue\r\n\r\n")
    assert inner.writes == [b"HTTP/1.1 100 Continue\r\n\r\n"]


def test_writes_while_corked_leave_as_one_on_uncork() -> None:
    inner = RecordingTransport()
    transport = corked(inner)
    transport.cork()
    transport.write(b"head\r\n\r\n")
    transport.write(b"body")
    assert inner.writes == []
    transport.uncork()
    assert inner.writes == [b"head\r\n\r\nbody"]
    transport.write(b"next")
    assert inner.writes == [b"head\r\n\r\nbody", b"next"]


def test_close_while_corked_sends_what_is_kept_first() -> None:
    inner = RecordingTransport()
    transport = corked(inner)
    transport.cork()
    transport.write(b"answer")
    transport.close()
    assert inner.writes == [b"answer"] and inner.closed
    transport.uncork()
    assert inner.writes == [b"answer"]


def test_everything_else_is_the_transport_itself() -> None:
    inner = RecordingTransport()
    assert corked(inner).is_closing() is False
