"""The SDK-only wheel (``HALFMQ_WHEEL=sdk``, docs/decisions/043-sdk-only-wheel.md) installed as a user would: a fresh
venv, built as a release builds it (sdist, then the wheel from it); the SDK works without a module of the server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import BrokerFactory
from tests.support.package_layout import ROOT

from .conftest import InstalledVenv, fresh_venv, pip_install
from .test_installed_wheel import SEND_PROGRAM

pytestmark = pytest.mark.slow

SERVER_PACKAGES = ("broker", "cli", "services", "jobs", "bench", "migrations")


@pytest.fixture(scope="module")
def sdk_only_venv(tmp_path_factory: pytest.TempPathFactory) -> InstalledVenv:
    out = tmp_path_factory.mktemp("sdk-only-dist")
    built = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)], capture_output=True, text=True,
                           timeout=600, env={**os.environ, "HALFMQ_WHEEL": "sdk"})
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    env = fresh_venv(tmp_path_factory.mktemp("sdk-only") / "venv")
    pip_install(env, str(next(out.glob("halfmq-*.whl"))))
    return env


def test_the_sdk_only_install_has_no_server_package_and_no_console_script(sdk_only_venv: InstalledVenv) -> None:
    package = sdk_only_venv.site_packages / "halfmq"
    assert (package / "client" / "__init__.py").is_file() and (package / "py.typed").is_file()
    assert not [name for name in SERVER_PACKAGES if (package / name).exists()]
    assert not (sdk_only_venv.root / "bin" / "halfmq").exists()


def test_an_sdk_program_sends_from_the_sdk_only_wheel(sdk_only_venv: InstalledVenv, start_broker: BrokerFactory,
                                                     tmp_path: Path) -> None:
    broker = start_broker()
    done = sdk_only_venv.run("-c", SEND_PROGRAM, broker.url, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().startswith(str(sdk_only_venv.site_packages)), done.stdout


def test_a_users_pytest_suite_starts_with_the_sdk_only_wheels_plugin(sdk_only_venv: InstalledVenv, tmp_path: Path) -> None:
    pip_install(sdk_only_venv, "pytest")
    (tmp_path / "test_service.py").write_text("def test_nothing_of_halfmq():\n    pass\n")
    fixtures = sdk_only_venv.run("-m", "pytest", "-p", "no:cacheprovider", "--fixtures", cwd=tmp_path)
    assert "halfmq_broker" in fixtures.stdout, fixtures.stdout[-2000:] + fixtures.stderr
    done = sdk_only_venv.run("-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=tmp_path)
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout + done.stderr
