"""How both consumer loops settle a batch, walked with plain values (no HTTP)."""

from __future__ import annotations

import logging
from typing import Any

import msgspec
import pytest

from halfmq.client.settlement import MAX_HANDLER_REASON, Outcome, Settle, failure_reason, log_handler_failure, settle_batch
from halfmq.client.step_drivers import run_steps
from halfmq.errors import BrokerUnavailable
from halfmq.wire import Message, SettleResult, SettleStatus


def message(n: int, handle: str | None = "h") -> Message:
    return Message(msg_id=f"m{n}", topic="T", queue_id=0, queue_offset=n, commit_log_offset=n, born_timestamp=0,
                   store_timestamp=0, body="x", receipt_handle=None if handle is None else f"{handle}{n}")


def settled(step: Settle) -> list[SettleResult]:
    return [SettleResult(receipt_handle=h, status=SettleStatus.OK) for h in step.handles]


def test_a_batch_is_settled_with_one_ack_and_one_nack_request_in_batch_order() -> None:
    batch = [message(1), message(2), message(3), message(4)]
    steps: list[Settle] = []
    run_steps(settle_batch(batch, [Outcome.ACK, Outcome.NACK, Outcome.RELEASE, Outcome.ACK]),
              lambda step: steps.append(step) or settled(step))
    assert steps == [Settle("ack", ["h1", "h4"]), Settle("nack", ["h2", "h3"])]


def test_nothing_to_nack_sends_no_nack_and_a_message_without_a_handle_is_skipped() -> None:
    steps: list[Settle] = []
    run_steps(settle_batch([message(1), message(2, handle=None)], [Outcome.ACK, Outcome.NACK]),
              lambda step: steps.append(step) or settled(step))
    assert steps == [Settle("ack", ["h1"])]


def test_a_failed_ack_is_logged_and_the_nack_still_sent(caplog: pytest.LogCaptureFixture) -> None:
    steps: list[Settle] = []

    def perform(step: Settle) -> Any:
        steps.append(step)
        if step.action == "ack":
            raise BrokerUnavailable("reset")
        return settled(step)

    run_steps(settle_batch([message(1), message(2)], [Outcome.ACK, Outcome.NACK]), perform)
    assert [s.action for s in steps] == ["ack", "nack"]
    assert any("ack of 1 message(s) failed" in r.getMessage() for r in caplog.records)


def test_a_failed_handler_s_nack_reason_is_its_exception_s_class_and_message_on_one_line() -> None:
    assert failure_reason(ValueError("db down")) == "ValueError: db down"
    assert failure_reason(KeyError()) == "KeyError"
    assert failure_reason(RuntimeError("line one\n  line two")) == "RuntimeError: line one line two"


def test_a_long_reason_is_cut_at_max_handler_reason_characters() -> None:
    reason = failure_reason(ValueError("x" * 1000))
    assert len(reason) == MAX_HANDLER_REASON and reason.startswith("ValueError: xxx") and reason.endswith("…")


def test_failures_with_different_reasons_are_nacked_one_request_per_reason_and_releases_without_one() -> None:
    batch = [message(1), message(2), message(3), message(4), message(5)]
    outcomes = [Outcome.NACK, Outcome.ACK, Outcome.NACK, Outcome.RELEASE, Outcome.NACK]
    reasons = ["ValueError: db down", None, "KeyError: 'sku'", None, "ValueError: db down"]
    steps: list[Settle] = []
    run_steps(settle_batch(batch, outcomes, reasons), lambda step: steps.append(step) or settled(step))
    assert steps == [Settle("ack", ["h2"]), Settle("nack", ["h1", "h5"], "ValueError: db down"),
                     Settle("nack", ["h3"], "KeyError: 'sku'"), Settle("nack", ["h4"])]


def _failed(caplog: pytest.LogCaptureFixture, attempt: int, level: int = logging.INFO) -> list[logging.LogRecord]:
    caplog.clear()
    with caplog.at_level(level, logger="halfmq.client.consumer"):
        try:
            raise ValueError("db down")
        except ValueError as exc:
            log_handler_failure(msgspec.structs.replace(message(1), delivery_attempt=attempt), exc)
    return list(caplog.records)


def test_a_failed_handler_logs_one_line_per_attempt_with_the_traceback_on_the_first_only(caplog: pytest.LogCaptureFixture) -> None:
    [first] = _failed(caplog, 1)
    [later] = _failed(caplog, 2)
    assert first.exc_info is not None and later.exc_info is None
    assert "ValueError: db down" in later.getMessage() and "\n" not in later.getMessage()
    assert [r.levelno for r in _failed(caplog, 3, logging.DEBUG)] == [logging.ERROR, logging.DEBUG]  # every traceback at DEBUG
