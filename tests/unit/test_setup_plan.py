"""`bin/demo` installs only what the demo runs; `bin/test` installs what the tests run, `bin/test --quick` what the unit
tests and static checks run (bin/setup --plan says which)."""

from __future__ import annotations

import subprocess

from tests.support.package_layout import ROOT

TEST_TOOLS = {"wrk", "prometheus", "chromium", "chromium-driver", "nodejs", "npm", "postgresql", "docker.io"}


def _plan(*args: str) -> tuple[set[str], str]:
    done = subprocess.run(["bash", str(ROOT / "bin" / "setup"), "--plan", *args], capture_output=True, text=True, timeout=30, check=True)
    lines = dict(line.split(": ", 1) for line in done.stdout.splitlines())
    return set(lines["apt"].split()), lines["pip"]


def test_the_demo_gets_java_and_the_jdbc_drivers_and_no_test_tool_or_dev_extra() -> None:
    apt, pip = _plan("--demo")
    assert apt == {"openjdk-17-jre-headless", "libpostgresql-jdbc-java", "libxerial-sqlite-jdbc-java"}
    assert pip == ".[broker,services,spark,rocketmq]"


def test_a_replicated_demo_gets_etcd_as_well() -> None:
    apt, _ = _plan("--demo", "--with-etcd")
    assert "etcd-server" in apt and not apt & TEST_TOOLS


def test_the_tests_get_every_tool_they_start_and_the_dev_extra() -> None:
    apt, pip = _plan("--with-postgres", "--with-docker")
    assert TEST_TOOLS <= apt and "etcd-server" in apt and pip == ".[all,dev]"


def test_bin_demo_asks_for_the_demo_plan() -> None:
    script = (ROOT / "bin" / "demo").read_text()
    assert "bin/setup --demo" in script and "--with-etcd" in script


def test_the_quick_tests_get_java_and_the_dev_extra_and_no_server_browser_or_node() -> None:
    apt, pip = _plan("--quick")
    assert apt == {"openjdk-17-jre-headless", "libpostgresql-jdbc-java", "libxerial-sqlite-jdbc-java"}
    assert pip == ".[all,dev]"


def test_bin_test_quick_asks_for_the_quick_plan_and_plain_bin_test_for_everything() -> None:
    script = (ROOT / "bin" / "test").read_text()
    assert "bin/setup --quick" in script and "bin/setup --with-postgres --with-docker --with-peers" in script
