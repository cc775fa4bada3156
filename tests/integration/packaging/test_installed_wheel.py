"""`pip install halfmq` as a user does it: the built wheel in a fresh venv, then programs run against a broker.

The SDK-only install must stay light (DESIGN section 2): one top-level name, no server-side library
imported, typed, and a handful of small dependencies.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from halfmq.bench.footprint import import_medians
from tests.conftest import BrokerFactory
from tests.support.processes import ROOT, ManagedProcess, free_port

from .conftest import InstalledVenv

pytestmark = pytest.mark.slow

SERVER_SIDE = ("fastapi", "starlette", "granian", "uvicorn", "sqlalchemy", "alembic", "pyspark", "rich", "pydantic_settings")
SDK_PACKAGES_AT_MOST = 15
SDK_MEGABYTES_AT_MOST = 22  # 13 MB of dependencies + halfmq's 7 MB (the one wheel carries the broker's code too; the
# SDK-only wheel, tests/integration/packaging/test_sdk_only_wheel.py, is the small one): 20.2 MB with the Kafka front
IMPORT_TIME_AT_MOST = 1.5  # × `import redis.asyncio`, medians of interleaved runs in one session
IMPORT_RUNS = 15

SEND_PROGRAM = """
import asyncio, sys
import halfmq
from halfmq import AsyncProducer, Producer, SendStatus

with Producer(sys.argv[1]) as producer:
    producer.create_topic("PACKAGING")
    sync_result = producer.send("PACKAGING", {"from": "the wheel"})

async def main():
    async with AsyncProducer(sys.argv[1]) as producer:
        return await producer.send("PACKAGING", {"from": "the wheel, async"})

async_result = asyncio.run(main())
assert sync_result.status == async_result.status == SendStatus.SEND_OK, (sync_result, async_result)
print(halfmq.__file__)
"""


def _top_level_names(env: InstalledVenv) -> set[str]:
    return {p.name for p in env.site_packages.iterdir()}


def test_the_sdk_install_puts_only_halfmq_at_the_top_level(sdk_venv: InstalledVenv, empty_venv: InstalledVenv) -> None:
    added = _top_level_names(sdk_venv) - _top_level_names(empty_venv)
    ours = {name for name in added if name.lower().startswith("halfmq")}
    assert ours == {"halfmq", next(n for n in ours if n.endswith(".dist-info"))}, ours
    for generic in ("broker", "services", "jobs", "bench", "migrations", "cli"):
        assert generic not in added, f"{generic} installed at the top level of site-packages"


SERVER_SIDE_DISTRIBUTIONS = {"fastapi", "starlette", "granian", "uvicorn", "sqlalchemy", "alembic", "psycopg", "pyspark",
                             "rich", "pydantic-settings", "prometheus-client", "crc32c"}


def _added(sdk_venv: InstalledVenv, empty_venv: InstalledVenv) -> tuple[set[str], float]:
    added, megabytes = sdk_venv.added_over(empty_venv)
    packages = set(added)
    print(f"\nSDK-only install: {len(packages)} packages, {megabytes:.1f} MB over an empty venv: {sorted(packages)}",
          file=sys.__stderr__)
    return packages, megabytes


def test_the_sdk_install_brings_no_server_side_distribution(sdk_venv: InstalledVenv, empty_venv: InstalledVenv) -> None:
    packages, _ = _added(sdk_venv, empty_venv)
    assert not packages & SERVER_SIDE_DISTRIBUTIONS, sorted(packages & SERVER_SIDE_DISTRIBUTIONS)


def test_the_sdk_install_is_small(sdk_venv: InstalledVenv, empty_venv: InstalledVenv) -> None:
    packages, megabytes = _added(sdk_venv, empty_venv)
    assert len(packages) <= SDK_PACKAGES_AT_MOST, sorted(packages)
    assert megabytes <= SDK_MEGABYTES_AT_MOST


def test_importing_the_sdk_loads_no_server_side_module(sdk_venv: InstalledVenv, tmp_path: Path) -> None:
    check = "import sys; from halfmq import AsyncProducer, Producer, TransactionProducer, Consumer; print(sorted(sys.modules))"
    done = sdk_venv.run("-c", check, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    loaded = {name.split(".")[0] for name in eval(done.stdout)}  # noqa: S307 (our own child's repr of a list)
    assert not loaded & set(SERVER_SIDE), sorted(loaded & set(SERVER_SIDE))


def test_halfmq_testing_without_the_broker_extra_names_the_extra_to_install(sdk_venv: InstalledVenv, tmp_path: Path) -> None:
    done = sdk_venv.run("-c", "import halfmq.testing", cwd=tmp_path)
    assert done.returncode == 1
    assert "ModuleNotFoundError" in done.stderr and "pip install 'halfmq[broker]'" in done.stderr, done.stderr


def test_importing_the_async_producer_takes_at_most_one_and_a_half_times_importing_redis_asyncio(
        sdk_venv: InstalledVenv, redis_venv: InstalledVenv, tmp_path: Path) -> None:
    medians = import_medians({"halfmq": (sdk_venv, "from halfmq import AsyncProducer"),
                              "redis": (redis_venv, "import redis.asyncio")}, IMPORT_RUNS, tmp_path)
    ratio = medians["halfmq"] / medians["redis"]
    print(f"\nimport medians: {medians}; ratio {ratio:.2f}", file=sys.__stderr__)
    assert ratio <= IMPORT_TIME_AT_MOST, medians


HTTP_LIBRARIES = {"aiohttp", "urllib3", "httpx", "httpcore", "anyio", "pydantic", "orjson", "tenacity"}
LOADED = "import sys; {program}; print(sorted({{name.split('.')[0] for name in sys.modules}}))"


@pytest.mark.parametrize(("program", "transport"), [
    ("from halfmq import Producer; Producer('http://127.0.0.1:9')", "aiohttp"),
    ("from halfmq.client.simple_consumer import SimpleConsumer; SimpleConsumer('http://127.0.0.1:9', 'g', 't')", "aiohttp"),
    ("from halfmq import Consumer; Consumer('http://127.0.0.1:9', 'g', 't', print)", "aiohttp"),
    ("from halfmq import AsyncProducer; AsyncProducer('http://127.0.0.1:9')", "aiohttp"),
    ("from halfmq import AsyncConsumer; AsyncConsumer('http://127.0.0.1:9', 'g', 't', print)", "aiohttp"),
    ("from halfmq import AsyncProducer", None),
])
def test_a_client_loads_only_the_http_library_it_uses(sdk_venv: InstalledVenv, tmp_path: Path, program: str,
                                                      transport: str | None) -> None:
    done = sdk_venv.run("-c", LOADED.format(program=program), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    loaded = set(eval(done.stdout)) & HTTP_LIBRARIES  # noqa: S307 (our own child's repr of a list)
    assert loaded == ({transport} if transport else set())


def test_the_wheel_ships_py_typed_and_the_migrations(sdk_venv: InstalledVenv) -> None:
    package = sdk_venv.site_packages / "halfmq"
    assert (package / "py.typed").is_file()
    assert (package / "migrations" / "alembic.ini").is_file()
    assert (package / "migrations" / "order" / "env.py").is_file()
    assert list((package / "migrations" / "credit" / "versions").glob("0001_*.py"))


def test_an_sdk_program_sends_to_a_broker_from_the_installed_wheel(sdk_venv: InstalledVenv, start_broker: BrokerFactory,
                                                                  tmp_path: Path) -> None:
    broker = start_broker()
    done = sdk_venv.run("-c", SEND_PROGRAM, broker.url, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().startswith(str(sdk_venv.site_packages)), done.stdout
    assert broker.alive


def test_version_is_one_figure_everywhere(sdk_venv: InstalledVenv, wheel: Path, tmp_path: Path) -> None:
    done = sdk_venv.run("-c", "import halfmq, importlib.metadata as m; print(halfmq.__version__, m.version('halfmq'))",
                        cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    module_version, installed_version = done.stdout.split()
    assert module_version == installed_version
    assert wheel.name.startswith(f"halfmq-{installed_version}-")


def _from_the_venv(env: InstalledVenv, name: str, args: list[str], environ: dict[str, str], health_url: str,
                   log_dir: Path) -> ManagedProcess:
    """The venv's own `halfmq` script, with nothing of the checkout on its path."""
    return ManagedProcess(name, [str(env.root / "bin" / "halfmq"), *args], {"PYTHONPATH": "", **environ}, health_url,
                          log_dir / f"{name}.log")


def test_the_services_extra_migrates_and_serves_the_order_service(services_venv: InstalledVenv, tmp_path: Path) -> None:
    broker_port, order_port = free_port(), free_port()
    broker_url, order_url = f"http://127.0.0.1:{broker_port}", f"http://127.0.0.1:{order_port}"
    broker = _from_the_venv(services_venv, "broker", ["broker", "--port", str(broker_port), "--data-dir", str(tmp_path / "broker")],
                            {}, f"{broker_url}/healthz", tmp_path)
    order = _from_the_venv(services_venv, "order", ["order", "--port", str(order_port), "--data-dir", str(tmp_path)],
                           {"ORDER_BROKER_URL": broker_url, "ORDER_PUBLIC_URL": order_url, "ORDER_LOG_LEVEL": "info"},
                           f"{order_url}/healthz", tmp_path)
    try:
        broker.start(timeout=60)
        order.start(timeout=60)
        placed = httpx.post(f"{order_url}/orders", json={"user_id": "wheel", "amount": "1.50"}, timeout=30)
        assert placed.status_code == 201, placed.text
        topic = httpx.get(f"{broker_url}/v1/topics/ORDER_TOPIC", timeout=5).json()
        assert sum(q["max_offset"] for q in topic["queues"]) == 1, topic  # committed through the wheel's SDK
    finally:
        order.stop()
        broker.stop()
    with sqlite3.connect(tmp_path / "order.db") as db:  # migrated by the wheel's own alembic.ini and versions
        newest = max(p.stem for p in (ROOT / "migrations" / "order" / "versions").glob("0*.py"))
        assert db.execute("SELECT version_num FROM alembic_version").fetchall() == [(newest,)]
    migrations = services_venv.run("-c", "from halfmq.services.database import MIGRATIONS; print(MIGRATIONS)", cwd=tmp_path)
    assert migrations.stdout.strip() == str(services_venv.site_packages / "halfmq" / "migrations"), migrations


def _console_script(env: InstalledVenv, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(env.root / "bin" / "halfmq"), *args], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={"PATH": f"{env.root / 'bin'}:/usr/bin:/bin", "HOME": str(cwd)})


@pytest.mark.parametrize("args", [["broker"], ["admin", "topics", "list"], []], ids=" ".join)
def test_the_console_script_without_the_server_extras_says_in_one_line_which_extra_to_install(
        sdk_venv: InstalledVenv, tmp_path: Path, args: list[str]) -> None:
    done = _console_script(sdk_venv, *args, cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, ""), done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and "pip install 'halfmq[broker]'" in done.stderr, done.stderr


def test_up_with_only_the_broker_extra_says_to_install_the_services_extra(broker_venv: InstalledVenv, tmp_path: Path) -> None:
    done = _console_script(broker_venv, "up", "--data-dir", str(tmp_path / "data"), cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and "pip install 'halfmq[services]'" in done.stderr, done.stderr
