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



def readme_programs_as_files(into: Path) -> list[str]:
    """The README's programs, cut out as tests/integration/test_readme_programs.py runs them, one file each in ``into``
    (readme_use_N.py: "Use halfmq from your service"; readme_which_N.py: "Which transaction do I need?")."""
    from tests.integration.test_readme_programs import WHICH, readme_programs

    programs = [("use", source) for source in readme_programs()] + [("which", source) for source in readme_programs(WHICH)]
    names = [f"readme_{section}_{number}.py" for number, (section, _) in enumerate(programs, 1)]
    into.mkdir(parents=True, exist_ok=True)
    for name, (_, source) in zip(names, programs, strict=True):
        (into / name).write_text(source)
    return names


@pytest.mark.typecheck
def test_the_readme_programs_pass_mypy_strict(tmp_path: Path) -> None:
    """A user who copies a README program into a project checked with `mypy --strict` gets no error from it."""
    programs = readme_programs_as_files(tmp_path / "site")  # beside the staged package, named relative to it
    result = _mypy(tmp_path, "--strict", *programs)
    assert result.returncode == 0, result.stdout + result.stderr
