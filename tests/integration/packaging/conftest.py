"""The built distribution, installed as a user would: a fresh venv per install, the wheel built once."""

from __future__ import annotations

import json
import subprocess
import sys
import venv
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.package_layout import ROOT


@dataclass
class InstalledVenv:
    root: Path

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    @property
    def site_packages(self) -> Path:
        return next((self.root / "lib").glob("python3*/site-packages"))

    def run(self, *args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """Run the venv's Python away from the checkout, so only the installed package can be imported."""
        return subprocess.run([str(self.python), *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                              env={"PATH": f"{self.root / 'bin'}:/usr/bin:/bin", "HOME": str(cwd)})

    def distributions(self) -> set[str]:
        listed = self.run("-m", "pip", "list", "--format", "json", cwd=self.root)
        assert listed.returncode == 0, listed.stderr
        return {d["name"].lower() for d in json.loads(listed.stdout)}

    def size(self) -> int:
        return sum(f.stat().st_size for f in self.site_packages.rglob("*") if f.is_file())


def fresh_venv(path: Path) -> InstalledVenv:
    venv.EnvBuilder(with_pip=True, symlinks=True).create(path)
    return InstalledVenv(path)


def pip_install(env: InstalledVenv, requirement: str) -> None:
    done = env.run("-m", "pip", "install", "-q", "--disable-pip-version-check", requirement, cwd=env.root, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="session")
def dist_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`python -m build`: the sdist, and the wheel built from it, as a release makes them."""
    out = tmp_path_factory.mktemp("dist")
    built = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
                           capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    return out


@pytest.fixture(scope="session")
def wheel(dist_dir: Path) -> Path:
    return next(dist_dir.glob("halfmq-*.whl"))


@pytest.fixture(scope="session")
def empty_venv(tmp_path_factory: pytest.TempPathFactory) -> InstalledVenv:
    return fresh_venv(tmp_path_factory.mktemp("empty") / "venv")


@pytest.fixture(scope="session")
def sdk_venv(tmp_path_factory: pytest.TempPathFactory, wheel: Path) -> InstalledVenv:
    env = fresh_venv(tmp_path_factory.mktemp("sdk") / "venv")
    pip_install(env, str(wheel))
    return env


@pytest.fixture(scope="session")
def services_venv(tmp_path_factory: pytest.TempPathFactory, wheel: Path) -> InstalledVenv:
    env = fresh_venv(tmp_path_factory.mktemp("services") / "venv")
    pip_install(env, f"halfmq[services,broker] @ {wheel.as_uri()}")
    return env
