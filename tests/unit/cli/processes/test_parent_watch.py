"""Which environments start the parent watch (its effect, a child ending with its parent, is tested with real processes)."""

from __future__ import annotations

import os

from halfmq.cli.processes.parent_watch import ENV, watch_parent_from_env


def test_no_variable_means_no_watch() -> None:
    assert watch_parent_from_env({}) is None


def test_a_pid_that_is_not_the_parent_came_through_another_process_and_is_ignored() -> None:
    environ = {ENV: str(os.getpid())}  # this process is not its own parent
    assert watch_parent_from_env(environ) is None
    assert ENV not in environ, "taken out, so this process's children do not inherit it"


def test_a_value_that_is_not_a_pid_is_ignored() -> None:
    assert watch_parent_from_env({ENV: "soon"}) is None
