"""Every file passes ruff with the rules pyproject.toml configures (a `# noqa` names a rule that is on)."""

import subprocess
import sys

from tests.support.package_layout import ROOT
from tests.support.wall_clock import unit_test_waits


def test_the_code_passes_ruff() -> None:
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "."],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


MAX_MODULE_LINES = 400  # the house rule (issue 31): a module that grows past it has more than one job
PACKAGE_FOLDERS = ("halfmq", "broker", "cli", "services", "jobs", "bench", "migrations")
CATALOGUES = {"halfmq/errors.py"}  # one class per stable error code: a list, long by nature (STYLE.md: do not squeeze it)


def test_no_module_of_the_package_is_over_400_lines() -> None:
    tracked = subprocess.run(["git", "ls-files", "-z", "--", *PACKAGE_FOLDERS], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout.split("\0")
    modules = [name for name in tracked if name.endswith(".py") and "/peer_runners/" not in name and (ROOT / name).is_file()
               and name not in CATALOGUES]
    assert len(modules) > 100
    long = {name: lines for name in modules if (lines := len((ROOT / name).read_text().splitlines())) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"


def test_no_unit_test_sleeps_or_waits_for_a_time() -> None:
    """Events, loop steps and fakes order a unit test's concurrent steps, not sleeps (tests/support/wall_clock.py)."""
    waits = unit_test_waits()
    assert not waits, ("unit tests (or the support modules they import) that wait on the wall clock; order the steps by an "
                       "event, asyncio.sleep(0), a fake clock or a fake sleep, or say why not with `# wall-clock: <why>`:\n"
                       + "\n".join(map(str, waits)))
