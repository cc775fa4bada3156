"""examples/user_suite is a user's own test suite: it gets `halfmq_broker` from the installed pytest plugin alone.

It runs as a separate pytest in its own directory, so nothing of this project's conftest
or settings reaches it; a user's suite finds the fixture the same way.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.processes import ROOT

pytestmark = pytest.mark.slow

SUITE = ROOT / "examples" / "user_suite"


def test_a_user_suite_runs_against_an_in_process_broker_from_the_plugin_alone() -> None:
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "ignore"],
                          cwd=SUITE, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "2 passed" in done.stdout, done.stdout
