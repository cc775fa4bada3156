"""The distribution's shape, checked from the checkout: the wheel's package list and what the CLI loads."""

from __future__ import annotations

import subprocess
import sys

from tests.support.package_layout import listed_packages, packages_on_disk

# rich is left out: httpx imports it for its own CLI wherever rich and click are installed, as they are
# here (the wheel tests run `halfmq order` where rich is not installed at all).
HEAVY = ("halfmq.bench", "fastapi", "starlette", "sqlalchemy", "alembic", "pyspark", "granian", "uvicorn")


def test_every_package_folder_is_listed_for_the_wheel() -> None:
    assert packages_on_disk() <= listed_packages(), sorted(packages_on_disk() - listed_packages())


def _modules_loaded_by(*argv: str) -> set[str]:
    probe = ("import sys, runpy; sys.argv = ['halfmq', *sys.argv[1:]]\n"
             "try:\n    runpy.run_module('halfmq.cli.main', run_name='__main__')\n"
             "except SystemExit:\n    pass\nprint(repr(sorted(sys.modules)), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, timeout=60)
    return set(eval(done.stderr.strip().splitlines()[-1]))  # noqa: S307 (our own child's repr of a list)


def test_halfmq_help_loads_no_benchmark_and_no_server_library() -> None:
    loaded = _modules_loaded_by("--help")
    assert "halfmq.cli.up_command" in loaded  # the whole parser was built
    assert not {m for m in loaded if m.startswith(HEAVY)}, sorted(m for m in loaded if m.startswith(HEAVY))


def test_halfmq_version_prints_the_package_version() -> None:
    import halfmq

    done = subprocess.run([sys.executable, "-m", "halfmq.cli.main", "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    assert done.stdout.strip() == f"halfmq {halfmq.__version__}"


def test_the_top_level_package_exports_the_sdk_lazily() -> None:
    probe = "import sys, halfmq; print('halfmq.client' in sys.modules, halfmq.AsyncProducer.__module__)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "halfmq.client.producer"]


def test_the_pytest_plugin_loads_no_broker_code_until_its_fixture_is_used() -> None:
    """pytest loads it in every suite where halfmq is installed, the SDK alone included."""
    probe = "import sys, halfmq.pytest_plugin; print(repr(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    loaded = {m for m in eval(done.stdout) if m.startswith((*HEAVY, "halfmq.broker", "halfmq.testing"))}  # noqa: S307
    assert not loaded, sorted(loaded)


def test_the_pytest_plugin_is_registered_by_an_entry_point() -> None:
    from importlib.metadata import entry_points

    assert [e.value for e in entry_points(group="pytest11") if e.name == "halfmq"] == ["halfmq.pytest_plugin"]
