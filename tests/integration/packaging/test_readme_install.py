"""README's install line, as printed, on a fresh machine today: a fresh clone and a fresh venv, nothing from an index
but the SDK's own dependencies (halfmq itself is not published yet)."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.package_layout import ROOT

from .conftest import InstalledVenv, fresh_venv

pytestmark = pytest.mark.slow

SECTION = "## Use halfmq from your service"


def readme_install_line() -> tuple[dict[str, str], list[str]]:
    """The first command of the section, split as a shell would: its ``NAME=value`` prefixes, then the words."""
    text = (ROOT / "README.md").read_text()
    line = next(line for line in text[text.index(SECTION):].splitlines() if line.startswith("    "))
    words = shlex.split(line.partition("#")[0])
    settings = {}
    while words and "=" in words[0] and not words[0].startswith("-"):
        name, _, value = words.pop(0).partition("=")
        settings[name] = value
    return settings, words


def fresh_clone(into: Path) -> Path:
    """The repository's tracked files as they are now (a clone of this commit, with its uncommitted edits)."""
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for name in filter(None, tracked.split("\0")):
        if (ROOT / name).is_file():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, into / name)
    return into


def test_the_readme_install_line_installs_the_sdk_from_a_fresh_clone(tmp_path: Path) -> None:
    settings, command = readme_install_line()
    assert command[:2] == ["pip", "install"], command
    clone = fresh_clone(tmp_path / "halfmq")
    env: InstalledVenv = fresh_venv(tmp_path / "venv")
    done = subprocess.run([str(env.root / "bin" / command[0]), *command[1:]], cwd=clone, capture_output=True, text=True,
                          timeout=600, env={"PATH": f"{env.root / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path), **settings})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    check = env.run("-c", "import importlib.util as u; from halfmq import Producer; "
                          "print(u.find_spec('fastapi') is None and u.find_spec('halfmq.broker') is None)", cwd=tmp_path)
    assert check.stdout.strip() == "True", check.stdout + check.stderr  # the SDK alone
