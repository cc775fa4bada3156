"""Counts a fault test prints for the record: written to pytest's terminal, so CI's output shows them even when the
test passes and its own output is captured (issue notes quote these lines)."""

from __future__ import annotations

from typing import Any

_config: Any = None


def attach(config: Any) -> None:
    global _config
    _config = config


def report(line: str) -> None:
    reporter = _config.pluginmanager.get_plugin("terminalreporter") if _config is not None else None
    if reporter is None:
        print(line)
        return
    capture = _config.pluginmanager.get_plugin("capturemanager")
    with capture.global_and_fixture_disabled():
        reporter.ensure_newline()
        reporter.write_line(line.strip("\n"), bold=True)
