"""CPU per item (a credited order, an acknowledged message): read from /proc, divided per item, a process gone left out."""

from __future__ import annotations

import os
import sys
import time

import pytest

from halfmq.bench.cpu import cpu_ms_per_item, cpu_seconds, medians

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


@linux_only
def test_a_process_cpu_time_grows_while_it_works() -> None:
    before = cpu_seconds(os.getpid())
    deadline = time.process_time() + 0.05
    while time.process_time() < deadline:
        pass
    after = cpu_seconds(os.getpid())
    assert before is not None and after is not None and after - before >= 0.03


def test_a_process_that_is_not_there_has_no_cpu_time() -> None:
    assert cpu_seconds(None) is None
    assert cpu_seconds(2**22 + 12345) is None  # above Linux's pid_max


def test_cpu_is_divided_per_credited_order_and_summed() -> None:
    before = {"broker": 1.0, "order": 2.0, "credit": None, "driver": 0.5}
    after = {"broker": 1.5, "order": 3.0, "credit": 4.0, "driver": 0.6}
    per_order = cpu_ms_per_item(before, after, items=500)
    assert per_order == {"broker": 1.0, "order": 2.0, "driver": 0.2, "total": 3.2}


def test_no_credited_order_gives_no_figure() -> None:
    assert cpu_ms_per_item({"broker": 1.0}, {"broker": 2.0}, items=0) == {}


def test_a_case_reports_each_process_median_over_its_runs() -> None:
    runs = [{"broker": 1.0, "total": 3.0}, {"broker": 3.0, "total": 5.0}, {"broker": 2.0, "driver": 0.5, "total": 4.0}]
    assert medians(runs) == {"broker": 2.0, "driver": 0.5, "total": 4.0}
    assert medians([{}, {}]) == {}
