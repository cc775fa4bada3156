"""The SDK passes `mypy --strict` (it ships py.typed, so its users type-check against these annotations);
the server, halfmq.broker, passes plain mypy."""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.package_layout import ROOT, stage


def _mypy(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # mypy resolves packages by folder, and halfmq.broker etc. are mapped from other folders: check the tree as installed.
    staged = stage(tmp_path / "site")
    return subprocess.run(
        [sys.executable, "-m", "mypy", *args, "--config-file", str(ROOT / "pyproject.toml"),
         "--cache-dir", str(tmp_path / "mypy-cache")],
        cwd=staged, capture_output=True, text=True, timeout=600,
    )


@pytest.mark.typecheck
def test_the_sdk_passes_mypy_strict(tmp_path: Path) -> None:
    result = _mypy(tmp_path, "--strict")  # pyproject's [tool.mypy] names the SDK's modules
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success" in result.stdout


@pytest.mark.typecheck
def test_the_broker_passes_mypy(tmp_path: Path) -> None:
    result = _mypy(tmp_path, "-p", "halfmq.broker")  # not strict; the modules it imports from halfmq are checked too
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success" in result.stdout
