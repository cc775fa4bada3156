"""README's "Use your RocketMQ clients": the Python program, exactly as printed, against a real broker's gRPC front."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.test_readme_programs import readme_programs, run_program

from .conftest import RmqBroker

pytestmark = pytest.mark.slow


def test_the_readme_rocketmq_program_runs_as_printed(rmq_broker: RmqBroker, tmp_path: Path) -> None:
    [program] = readme_programs("## Use your RocketMQ clients")
    out = run_program(program, {"HALFMQ_ROCKETMQ": rmq_broker.endpoint}, tmp_path)
    assert out.strip().splitlines() == ["order 42 created"]
