"""The SDK passes `mypy --strict`: it ships py.typed, so its users type-check against these annotations."""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.package_layout import ROOT, stage


@pytest.mark.typecheck
def test_the_sdk_passes_mypy_strict(tmp_path: Path) -> None:
    # mypy resolves packages by folder, and halfmq.broker etc. are mapped from other folders: check the tree as installed.
    staged = stage(tmp_path / "site")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--config-file", str(ROOT / "pyproject.toml"),
         "--cache-dir", str(tmp_path / "mypy-cache")],  # pyproject's [tool.mypy] names the SDK's modules
        cwd=staged, capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success" in result.stdout
