"""Every file passes ruff with the rules pyproject.toml configures (a `# noqa` names a rule that is on)."""

import subprocess
import sys
from pathlib import Path

from tests.support.package_layout import ROOT
from tests.support.wall_clock import unit_test_waits


def test_the_code_passes_ruff() -> None:
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "."],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_class_with_more_public_methods_than_the_rule_allows_fails_ruff(tmp_path: Path) -> None:
    """The size rule is a class's (PLR0904 in pyproject.toml), not a file's: this proves it is on and bites."""
    crowded = tmp_path / "crowded.py"
    crowded.write_text("class Crowded:\n" + "".join(f"    def m{i}(self) -> None: ...\n" for i in range(21)))
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--config", str(ROOT / "pyproject.toml"),
                             "--output-format", "concise", str(crowded)], capture_output=True, text=True, timeout=120)
    assert "too-many-public-methods" in result.stdout, result.stdout + result.stderr  # PLR0904


def test_no_unit_test_sleeps_or_waits_for_a_time() -> None:
    """Events, loop steps and fakes order a unit test's concurrent steps, not sleeps (tests/support/wall_clock.py)."""
    waits = unit_test_waits()
    assert not waits, ("unit tests (or the support modules they import) that wait on the wall clock; order the steps by an "
                       "event, asyncio.sleep(0), a fake clock or a fake sleep, or say why not with `# wall-clock: <why>`:\n"
                       + "\n".join(map(str, waits)))
