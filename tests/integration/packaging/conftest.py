"""The built distribution, installed as a user would: a fresh venv per install, the wheel built once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from halfmq.bench.footprint import Venv as InstalledVenv
from halfmq.bench.footprint import fresh_venv, pip_install
from tests.support.package_layout import ROOT

__all__ = ["InstalledVenv", "fresh_venv", "pip_install"]


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
def broker_venv(tmp_path_factory: pytest.TempPathFactory, wheel: Path) -> InstalledVenv:
    env = fresh_venv(tmp_path_factory.mktemp("broker") / "venv")
    pip_install(env, f"halfmq[broker] @ {wheel.as_uri()}")
    return env


@pytest.fixture(scope="session")
def services_venv(tmp_path_factory: pytest.TempPathFactory, wheel: Path) -> InstalledVenv:
    env = fresh_venv(tmp_path_factory.mktemp("services") / "venv")
    pip_install(env, f"halfmq[services,broker] @ {wheel.as_uri()}")
    return env


@pytest.fixture(scope="session")
def redis_venv(tmp_path_factory: pytest.TempPathFactory) -> InstalledVenv:
    """redis-py, the yardstick for the SDK's import time."""
    env = fresh_venv(tmp_path_factory.mktemp("redis") / "venv")
    pip_install(env, "redis")
    return env
