"""Every file passes ruff with the rules pyproject.toml configures (a `# noqa` names a rule that is on)."""

import subprocess
import sys

from tests.support.package_layout import ROOT


def test_the_code_passes_ruff() -> None:
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "."],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
