"""Counts a fault test prints for the record: written to pytest's terminal, so CI's output shows them even when the
test passes and its own output is captured (issue notes quote these lines).

The lines ride the test's report (a section named ``halfmq figures``) and the process that shows the run writes them:
with ``pytest -n 2`` (bin/test) a test runs in a worker whose terminal nobody sees, and its reports travel to the
controller, which prints.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

SECTION = "halfmq figures"
_pending: list[str] = []


class _Figures:
    """Attaches the lines reported during a test's phase to that phase's report, and prints them where the run shows."""

    def __init__(self, config: Any) -> None:
        self.config = config

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: Any, call: Any) -> Any:
        outcome = yield
        if _pending:
            outcome.get_result().sections.append((SECTION, "\n".join(_pending)))
            _pending.clear()

    def pytest_runtest_logreport(self, report: Any) -> None:
        if os.environ.get("PYTEST_XDIST_WORKER"):
            return  # the controller prints it, from the report it is sent
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        for name, text in report.sections:
            if name != SECTION:
                continue
            if reporter is None:
                print(text)
                continue
            reporter.ensure_newline()
            for line in text.splitlines():
                reporter.write_line(line, bold=True)


def attach(config: Any) -> None:
    config.pluginmanager.register(_Figures(config), "halfmq-figures")


def report(line: str) -> None:
    """Show ``line`` in the run's output once the current test phase ends (pass or fail)."""
    _pending.append(line.strip("\n"))
