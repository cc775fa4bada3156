"""The replication stream's frames: a run carries its header, the history and picture when given, and the log bytes."""

from __future__ import annotations

import pytest

from halfmq.broker.cluster.stream_frames import BEHIND, RUN, BadFrame, ack_frame, read_ack, read_run, run_frame


def test_a_run_reads_back_as_it_was_written_with_its_history_and_picture() -> None:
    frame = run_frame(RUN, 7, 100, 300, 90, 0, 1 << 20, b"x" * 200, history=[(3, 0), (7, 50)], picture='{"n":1}')
    run = read_run(frame)
    assert (run.kind, run.term, run.from_offset, run.log_end, run.high_watermark, run.log_start, run.segment_bytes) == \
        (RUN, 7, 100, 300, 90, 0, 1 << 20)
    assert run.history == [(3, 0), (7, 50)] and run.picture == '{"n":1}' and run.data == b"x" * 200


def test_a_run_without_bytes_or_extras_is_its_header_alone() -> None:
    run = read_run(run_frame(BEHIND, 2, 4096, 8192, 8000, 4096, 1024))
    assert run.kind == BEHIND and run.data == b"" and run.history is None and run.picture is None


@pytest.mark.parametrize("frame", [b"", b"\x01" * 10, b"\x09" + run_frame(RUN, 1, 0, 0, 0, 0, 1)[1:],
                                   run_frame(RUN, 1, 0, 0, 0, 0, 1)[:-4] + b"\xff\x00\x00\x00"])
def test_a_short_frame_an_unknown_kind_or_extras_past_the_end_is_refused(frame: bytes) -> None:
    with pytest.raises(BadFrame):
        read_run(frame)


def test_an_ack_reads_back_and_one_claiming_more_on_disk_than_appended_is_refused() -> None:
    assert read_ack(ack_frame(10, 20)) == (10, 20)
    with pytest.raises(BadFrame):
        read_ack(ack_frame(30, 20))
    with pytest.raises(BadFrame):
        read_ack(b"\x00" * 15)
