"""The replication stream's frames (decision 054): one WebSocket per follower, binary messages, no call per run.

The follower's first message is a ``wire.FetchRequest`` (where its log ends, how far it is
on disk, its term, the history it holds); then the leader pushes runs and the follower acks:

* a **run** (leader -> follower): a fixed header (term, the run's first offset, the leader's log end, high watermark
  and log start, its segment size), the term history when the follower does not hold it, the set's picture about
  once a second, then the log bytes from ``from_offset``, at most ``RUN_MAX_BYTES``. A run without bytes tells a
  moved high watermark (coalesced) or that the leader is alive;
* **behind** (leader -> follower): the log starts past where the follower asks from (``catch_up.BehindLeader``);
* an **ack** (follower -> leader): its log end on disk and its appended end, each time an fsync completes (the
  newest wins) and at least every ``KEEPALIVE_SECONDS``.

Pure: encoding and decoding only; the loops are the leader's (replication_stream.py) and follower.py.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import orjson

RUN_MAX_BYTES = 256 * 1024  # a run's log bytes at most (NATS: 256 KiB per append)
KEEPALIVE_SECONDS = 0.5  # a side that sent nothing for this long sends an empty run / an ack
SILENT_SECONDS = 2 * KEEPALIVE_SECONDS  # a follower not heard from for this long is pushed no bytes until it speaks
WATERMARK_SECONDS = 0.005  # a moved high watermark alone is told at most this often (it rides the next run anyway)

RUN = 1
BEHIND = 2
_HEAD = struct.Struct("<BqqqqqqI")  # kind, term, from_offset, log_end, high_watermark, log_start, segment_bytes, extras length
_ACK = struct.Struct("<qq")  # durable, appended


class BadFrame(ValueError):
    """A message that is not a frame of this protocol: the stream ends."""


@dataclass(frozen=True, slots=True)
class Run:
    kind: int
    term: int
    from_offset: int
    log_end: int
    high_watermark: int
    log_start: int
    segment_bytes: int
    history: list[tuple[int, int]] | None
    picture: str | None
    data: bytes


def run_frame(kind: int, term: int, from_offset: int, log_end: int, high_watermark: int, log_start: int, segment_bytes: int,
              data: bytes = b"", history: list[tuple[int, int]] | None = None, picture: str | None = None) -> bytes:
    extras = b""
    if history is not None or picture is not None:
        extras = orjson.dumps({"history": history, "picture": picture})
    head = _HEAD.pack(kind, term, from_offset, log_end, high_watermark, log_start, segment_bytes, len(extras))
    return b"".join((head, extras, data))


def read_run(frame: bytes) -> Run:
    if len(frame) < _HEAD.size:
        raise BadFrame(f"a run frame of {len(frame)} bytes: shorter than its header")
    kind, term, start, end, hwm, log_start, segment, extras_len = _HEAD.unpack_from(frame)
    if kind not in (RUN, BEHIND) or _HEAD.size + extras_len > len(frame):
        raise BadFrame(f"frame kind {kind}, extras of {extras_len} bytes in {len(frame)}")
    history = picture = None
    if extras_len:
        extras = orjson.loads(frame[_HEAD.size:_HEAD.size + extras_len])
        history = [(int(t), int(s)) for t, s in extras["history"]] if extras.get("history") is not None else None
        picture = extras.get("picture")
    return Run(kind, term, start, end, hwm, log_start, segment, history, picture, frame[_HEAD.size + extras_len:])


def ack_frame(durable: int, appended: int) -> bytes:
    return _ACK.pack(durable, appended)


def read_ack(frame: bytes) -> tuple[int, int]:
    """(durable, appended); BadFrame unless it is an ack with ``0 <= durable <= appended``."""
    if len(frame) != _ACK.size:
        raise BadFrame(f"an ack frame of {len(frame)} bytes, not {_ACK.size}")
    durable, appended = _ACK.unpack(frame)
    if not 0 <= durable <= appended:
        raise BadFrame(f"an ack of durable {durable}, appended {appended}")
    return durable, appended
