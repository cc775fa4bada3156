"""DESIGN section 2's dependency rules, enforced by import-linter over the package as installed."""

import subprocess
import sys
from pathlib import Path

from tests.support.package_layout import ROOT, stage


def test_import_contracts_hold(tmp_path: Path) -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    staged = stage(tmp_path / "site")  # grimp walks a package's folder; ours is mapped from several
    result = subprocess.run([str(lint), "--no-cache", "--config", str(ROOT / "pyproject.toml")], cwd=staged,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "BROKEN" not in result.stdout
    assert "halfmq.broker.store" in result.stdout and "KEPT" in result.stdout
