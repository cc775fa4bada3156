"""The SDK-only wheel (``HALFMQ_WHEEL=sdk``, setup.py): what `pip install halfmq` will carry once it is published.

Both wheels are built offline from a copy of the package's folders, as `pip wheel --no-build-isolation` builds them
(docs/decisions/043-sdk-only-wheel.md).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.support.package_layout import ROOT, package_dirs

SERVER_FOLDERS = ("broker", "cli", "services", "jobs", "bench", "migrations")
SDK_FILES = ("halfmq/__init__.py", "halfmq/py.typed", "halfmq/testing.py", "halfmq/pytest_plugin.py", "halfmq/errors.py",
             "halfmq/check_signing.py", "halfmq/asgi_body.py", "halfmq/client/__init__.py")
SDK_WHEEL_BYTES_AT_MOST = 180_000  # 113 KB when first built (the full wheel: 558 KB); 160 KB before halfmq.spark (the Spark source) joined it


def _source_tree(into: Path) -> Path:
    """What a build reads: pyproject.toml, setup.py, the README and every mapped folder (server ones included)."""
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(ROOT / name, into / name)
    for folder in {path.relative_to(ROOT).parts[0] for path in package_dirs().values()}:
        shutil.copytree(ROOT / folder, into / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return into


def _build(source: Path, out: Path, shape: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "HALFMQ_WHEEL"} | ({"HALFMQ_WHEEL": shape} if shape else {})
    return subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(source)],
                          capture_output=True, text=True, timeout=300, env=env)


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The default (full) wheel and the SDK-only one, built from one source tree."""
    source = _source_tree(tmp_path_factory.mktemp("source"))
    built: dict[str, Path] = {}
    for shape in ("full", "sdk"):
        out = tmp_path_factory.mktemp(shape)
        done = _build(source, out, shape if shape == "sdk" else None)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        built[shape] = next(out.glob("halfmq-*.whl"))
    print(f"\nwheels: full {built['full'].stat().st_size:,} B, SDK-only {built['sdk'].stat().st_size:,} B", file=sys.__stderr__)
    return built


def _names(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())


def _entry_points(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as archive:
        return archive.read(next(n for n in archive.namelist() if n.endswith(".dist-info/entry_points.txt"))).decode()


def _server_files(names: set[str]) -> set[str]:
    return {name for name in names if name.startswith(tuple(f"halfmq/{folder}/" for folder in SERVER_FOLDERS))}


def test_the_sdk_only_wheel_holds_the_sdk_and_the_wire_contract(wheels: dict[str, Path]) -> None:
    names = _names(wheels["sdk"])
    assert set(SDK_FILES) <= names, sorted(set(SDK_FILES) - names)
    assert names & {"halfmq/wire.py", "halfmq/wire/__init__.py"}, "no halfmq.wire"
    assert any(name.startswith("halfmq/client/sqlalchemy/") for name in names)


def test_the_sdk_only_wheel_holds_no_server_module(wheels: dict[str, Path]) -> None:
    assert not _server_files(_names(wheels["sdk"])), sorted(_server_files(_names(wheels["sdk"])))[:10]


def test_the_sdk_only_wheel_is_the_full_wheels_halfmq_folder_without_the_server(wheels: dict[str, Path]) -> None:
    full, sdk = (_names(wheels[shape]) for shape in ("full", "sdk"))
    package_files = {name for name in full if not name.startswith("halfmq-")}  # not the .dist-info
    assert {name for name in sdk if not name.startswith("halfmq-")} == package_files - _server_files(package_files)


def test_the_sdk_only_wheel_installs_no_console_script_and_keeps_the_pytest_plugin(wheels: dict[str, Path]) -> None:
    entry_points = _entry_points(wheels["sdk"])
    assert "[console_scripts]" not in entry_points, entry_points
    assert "[pytest11]\nhalfmq = halfmq.pytest_plugin" in entry_points, entry_points


def test_the_sdk_only_wheel_is_small(wheels: dict[str, Path]) -> None:
    assert wheels["sdk"].stat().st_size <= SDK_WHEEL_BYTES_AT_MOST
    assert wheels["sdk"].stat().st_size * 3 <= wheels["full"].stat().st_size


def test_the_default_build_is_the_whole_distribution_with_its_console_script(wheels: dict[str, Path]) -> None:
    names = _names(wheels["full"])
    assert {f"halfmq/{folder}/__init__.py" for folder in SERVER_FOLDERS} <= names
    assert "[console_scripts]\nhalfmq = halfmq.cli.main:main" in _entry_points(wheels["full"])


def test_an_unknown_wheel_shape_is_refused_by_name(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "halfmq", source / "halfmq", ignore=shutil.ignore_patterns("__pycache__"))
    done = _build(source, tmp_path / "out", "server")
    assert done.returncode != 0
    assert "HALFMQ_WHEEL='server': expected one of full, sdk" in done.stdout + done.stderr
