"""The SDK passes `mypy --strict` (it ships py.typed, so its users type-check against these annotations);
the server, halfmq.broker, passes plain mypy."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.package_layout import ROOT, stage


def checked_tree(name: str) -> Path:
    """Where one check stages the package and keeps its mypy cache between runs (.mypy_cache/<name>, ignored by git):
    the same folder each time, so mypy's incremental cache holds (a warm run checks only what changed: ~5 s, not ~25 s).
    One cache per check, since mypy drops a cache written under other options (strict or not)."""
    tree = ROOT / ".mypy_cache" / name
    shutil.rmtree(tree / "site", ignore_errors=True)  # a module deleted from the repository must not linger staged
    (tree / "site").mkdir(parents=True)
    return tree


def _mypy(tree: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # mypy resolves packages by folder, and halfmq.broker etc. are mapped from other folders: check the tree as installed
    # (copied with their times, so the cache sees unchanged files as unchanged).
    staged = stage(tree / "site")
    return subprocess.run(
        [sys.executable, "-m", "mypy", *args, "--config-file", str(ROOT / "pyproject.toml"),
         "--cache-dir", str(tree / "cache")],
        cwd=staged, capture_output=True, text=True, timeout=600,
    )


@pytest.mark.typecheck
def test_the_sdk_passes_mypy_strict() -> None:
    result = _mypy(checked_tree("sdk-strict"), "--strict")  # pyproject's [tool.mypy] names the SDK's modules
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success" in result.stdout


@pytest.mark.typecheck
def test_the_broker_passes_mypy() -> None:
    result = _mypy(checked_tree("broker"), "-p", "halfmq.broker")  # not strict; the modules it imports from halfmq are checked too
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
def test_the_readme_programs_pass_mypy_strict() -> None:
    """A user who copies a README program into a project checked with `mypy --strict` gets no error from it."""
    tree = checked_tree("readme-programs")
    programs = readme_programs_as_files(tree / "site")  # beside the staged package, named relative to it
    result = _mypy(tree, "--strict", *programs)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.typecheck
def test_the_faststream_broker_passes_mypy_strict() -> None:
    """integrations/faststream-halfmq ships py.typed too: its users type-check against it."""
    folder = ROOT / "integrations" / "faststream-halfmq"
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "-p", "faststream_halfmq", "--cache-dir", str(checked_tree("faststream") / "cache")],
        cwd=folder, capture_output=True, text=True, timeout=600, env={**os.environ, "MYPYPATH": str(ROOT)},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success" in result.stdout
