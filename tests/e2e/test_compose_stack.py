"""The compose stack for real, on a Docker engine: built, health-gated, faults, kill -9, Spark, a Kafka client, `down -v`.

The engine is the one that answers, else Debian's dockerd started for the session (images and
layers kept between runs, see tests/support/docker_engine.py). Base images that cannot be pulled
are stood in for by images built from Debian packages (docker/standins). On CI this never skips.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator

import httpx
import pytest
from confluent_kafka import Consumer as KafkaConsumer
from confluent_kafka import Producer as KafkaProducer

from tests.support.compose import ComposeStack
from tests.support.compose_orders import assert_credited_exactly_once, place, settled
from tests.support.docker_engine import DockerEngine
from tests.support.processes import ROOT, free_port
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]
FIGURES_TITLE = "compose stack figures:"  # the header conftest's `figures` prints

SERVICES = ["postgres", "broker", "order", "credit", "spark"]
PROJECT = "halfmq-test"


@pytest.fixture(scope="module")
def stack(engine: DockerEngine, figures: dict[str, str]) -> Iterator[ComposeStack]:
    env = engine.env() | {"DOCKER_BUILDKIT": "0", "COMPOSE_DOCKER_CLI_BUILD": "1"}  # the classic builder: no buildx here
    compose = ComposeStack(PROJECT, env, {service: free_port() for service in ("broker", "order", "credit", "kafka")})
    figures["engine"] = (
        f"{compose.docker('version', '--format', '{{.Server.Version}}').stdout.strip()} ({'started here' if engine.started else 'already running'})"
    )
    figures["compose"] = f"{' '.join(compose.command)} {compose.version()}"

    started = time.monotonic()
    images = subprocess.run(
        [sys.executable, str(ROOT / "docker/standins/build.py")],
        env=compose.env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert images.returncode == 0, images.stdout[-3000:] + images.stderr[-3000:]
    figures["base images"] = f"{time.monotonic() - started:.1f} s: " + "; ".join(
        line.removeprefix("standins: ")
        for line in images.stdout.splitlines()
        if line.startswith("standins: ") and ":" in line[10:]
    )

    compose("down", "-v", "--remove-orphans")  # what a killed earlier run may have left
    started = time.monotonic()
    compose("build", timeout=2400)
    figures["build"] = f"{time.monotonic() - started:.1f} s"
    started = time.monotonic()
    up = compose("up", "-d", timeout=600, check=False)
    assert up.returncode == 0, f"up -d exited {up.returncode}:\n{up.stderr[-2000:]}\n{compose.logs()}"
    compose.wait_healthy(["postgres", "broker", "order", "credit"], timeout=180)
    figures["time to healthy (postgres, broker, order, credit)"] = f"{time.monotonic() - started:.1f} s"
    try:
        yield compose
    finally:
        compose("down", "-v", "--remove-orphans", timeout=300, check=False)


@pytest.fixture(scope="module")
def placed() -> dict[str, int]:
    """What the order test committed, for the Spark test to reconcile against."""
    return {}


def service_up(compose: ComposeStack, service: str, path: str = "/healthz") -> bool:
    try:
        return httpx.get(compose.url(service) + path, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def test_every_volume_is_writable_by_its_service(stack: ComposeStack) -> None:
    for service in ["postgres", "broker", "order", "credit"]:
        for target in stack.volume_targets(service):
            probe = stack("exec", "-T", service, "sh", "-c", f'test -w "{target}" && id -un', check=False)
            assert probe.returncode == 0, f"{service} cannot write its volume {target}: {probe.stdout}{probe.stderr}"


def test_a_kafka_client_on_the_host_produces_and_consumes_through_the_brokers_published_kafka_listener(
    stack: ComposeStack, figures: dict[str, str]
) -> None:
    """The image has the Kafka front, the compose file turns it on, and Metadata sends the client to the published port
    (not to the container's name, which the host cannot resolve); SASL/PLAIN with the admin principal's token."""
    token = stack("exec", "-T", "broker", "cat", "/data/auth/admin.token").stdout.strip()
    bootstrap = f"127.0.0.1:{stack.ports['kafka']}"
    client = {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
              "sasl.username": "admin", "sasl.password": token}
    topic = f"COMPOSE_KAFKA_{uuid.uuid4().hex[:6].upper()}"
    started = time.monotonic()
    producer = KafkaProducer({**client, "message.timeout.ms": 60_000, "enable.idempotence": True})
    assert [(b.host, b.port) for b in producer.list_topics(timeout=30).brokers.values()] == [("127.0.0.1", stack.ports["kafka"])]
    delivered: list[str] = []
    for i in range(20):
        producer.produce(topic, f"k{i}".encode(), partition=0, on_delivery=lambda err, msg: delivered.append(str(err) if err else "ok"))
    assert producer.flush(60) == 0
    assert delivered == ["ok"] * 20

    consumer = KafkaConsumer({**client, "group.id": f"compose-{topic.lower()}", "auto.offset.reset": "earliest",
                              "enable.auto.commit": False, "isolation.level": "read_committed"})
    try:
        consumer.subscribe([topic])
        got: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(got) < 20 and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                got.append(message.value())
        assert got == [f"k{i}".encode() for i in range(20)]
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    figures["kafka client on the host (20 produced, consumed, committed)"] = f"{time.monotonic() - started:.1f} s"


def test_orders_are_credited_exactly_once_through_every_fault_and_a_broker_kill9(
    stack: ComposeStack, figures: dict[str, str], placed: dict[str, int]
) -> None:
    run = uuid.uuid4().hex[:6]
    acked: list[str] = []  # users whose order was answered 201: it must be credited
    refused: list[str] = []  # answered 503 (fail-local-tx, broker down): no order, no credit
    unknown: list[str] = []  # the connection broke (crash fault): at most one order, credited if it exists
    plan = [(None, 20), ("drop-end", 5), ("fail-local-tx", 3), ("crash-after-commit", 2)]
    with httpx.Client() as client:
        for fault, count in plan:
            for i in range(count):
                user = f"c{run}-{fault or 'plain'}-{i}"
                status = place(client, stack, user, fault, timeout=30)
                if fault == "fail-local-tx":
                    assert status == 503, status
                    refused.append(user)
                elif fault == "crash-after-commit":
                    assert status is None, f"crash-after-commit answered {status}"
                    unknown.append(user)
                    wait_for(lambda: service_up(stack, "order"), timeout=60, interval=0.5)  # restarted by its policy
                else:
                    assert status == 201, status
                    acked.append(user)
        figures["orders before the kill"] = (
            f"{len(acked)} acked, {len(refused)} refused (fail-local-tx), {len(unknown)} crash-after-commit"
        )

        # kill -9 of the broker's process while orders keep coming
        placing = threading.Event()
        during: list[tuple[str, int | None]] = []

        def keep_placing() -> None:
            with httpx.Client() as own:
                i = 0
                while not placing.is_set() and i < 400:
                    user = f"c{run}-kill-{i}"
                    during.append((user, place(own, stack, user, timeout=30)))
                    i += 1
                    time.sleep(0.02)

        restarts = stack.restarts("broker")
        placer = threading.Thread(target=keep_placing)
        placer.start()
        time.sleep(1.0)
        pid = stack.kill9("broker")
        killed = time.monotonic()
        wait_for(
            lambda: stack.state("broker")["Pid"] not in (0, pid) and service_up(stack, "broker"),
            timeout=60,
            interval=0.1,
        )
        restart = time.monotonic() - killed
        time.sleep(2.0)
        placing.set()
        placer.join(60)
        after = stack.state("broker")
        assert after["Status"] == "running" and after["Pid"] != pid
        assert stack.restarts("broker") == restarts + 1, "the broker came back, but not through its restart policy"
        figures["broker restart after kill -9"] = (
            f"{restart:.1f} s until /healthz answered again (restarted by the restart policy)"
        )
        for user, status in during:  # a 503 is a refusal: the order was not placed
            {201: acked, 503: refused}.get(status, unknown).append(user)
        statuses: dict[str, int] = {}
        for _, status in during:
            statuses[str(status)] = statuses.get(str(status), 0) + 1
        figures["orders during the kill"] = ", ".join(f"{n} x {s}" for s, n in sorted(statuses.items()))

        started = time.monotonic()
        users = acked + unknown + refused
        seen = wait_for(lambda: settled(client, stack, users), timeout=180, interval=1.0)
        figures["time to settle every credit"] = f"{time.monotonic() - started:.1f} s"
        committed = assert_credited_exactly_once(seen, acked, refused, unknown)
        crashed = [u for u in unknown if "crash-after-commit" in u]
        assert all(len(seen[u][0]) == 1 for u in crashed), "a crash-after-commit order was lost"
        figures["orders committed / credited"] = (
            f"{committed} / {sum(len(c) for _, c in seen.values())} (each credited exactly once)"
        )
        placed["committed"] = committed


def test_docker_kill_is_a_manual_stop_the_restart_policy_leaves_down(stack: ComposeStack) -> None:
    stack.docker("kill", stack.container("broker"))
    time.sleep(5)
    assert stack.state("broker")["Status"] == "exited"
    stack("start", "broker")
    stack.wait_healthy(["broker"], timeout=60)


def test_the_monitoring_profiles_prometheus_scrapes_the_broker_with_the_admin_token_and_loads_its_rules(stack: ComposeStack) -> None:
    stack.ports["prometheus"] = free_port()
    stack.env["HALFMQ_COMPOSE_PROMETHEUS_PORT"] = str(stack.ports["prometheus"])
    stack("--profile", "monitoring", "up", "-d", "--no-deps", "prometheus", timeout=300)
    try:
        def ready() -> bool:
            try:
                return httpx.get(f"{stack.url('prometheus')}/-/ready", timeout=5).status_code == 200
            except httpx.TransportError:
                return False

        wait_for(ready, timeout=120, interval=1)

        def query(expr: str) -> list[dict]:
            answer = httpx.get(f"{stack.url('prometheus')}/api/v1/query", params={"query": expr}, timeout=10)
            answer.raise_for_status()
            return answer.json()["data"]["result"]

        [up] = wait_for(lambda: query('up{job="halfmq-broker"} == 1'), timeout=60, interval=1)  # scraped, token accepted
        assert up["value"][1] == "1"
        assert wait_for(lambda: query("halfmq_commit_log_end_offset"), timeout=30, interval=1)  # the broker's own series
        def rules() -> list[dict]:
            groups = httpx.get(f"{stack.url('prometheus')}/api/v1/rules", timeout=10).json()["data"]["groups"]
            return [r for g in groups for r in g["rules"]]

        written = set(re.findall(r"- alert: (\w+)", (ROOT / "docker" / "monitoring" / "rules.yml").read_text()))
        assert {r["name"] for r in rules()} == written  # every rule loaded; each "unknown" until its first evaluation (15 s)
        wait_for(lambda: all(r["health"] == "ok" for r in rules()), timeout=60, interval=1)
    finally:
        stack("--profile", "monitoring", "rm", "-s", "-f", "prometheus", timeout=120, check=False)


def test_spark_job_reconciles_in_its_container(
    stack: ComposeStack, figures: dict[str, str], placed: dict[str, int]
) -> None:
    started = time.monotonic()
    stack.wait_healthy(["spark"], timeout=400)  # its first scheduled aggregation has finished
    figures["spark service healthy after"] = f"{time.monotonic() - started:.1f} s more"
    started = time.monotonic()
    done = stack("run", "--rm", "-T", "spark", "halfmq", "aggregate", timeout=600, check=False)
    assert done.returncode == 0, f"aggregate exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    report = json.loads(done.stdout[done.stdout.rindex("\n{") + 1 :])
    figures["spark aggregate (compose run)"] = (
        f"{time.monotonic() - started:.1f} s: {report['orders_committed']} orders, {report['credits']} credits"
    )
    assert report["missing_credits"] == [] and report["orphan_credits"] == [] and report["balance_mismatches"] == []
    assert report["orders_committed"] == report["credits"]
    if "committed" in placed:  # the order test ran first: the databases hold exactly its orders
        assert report["orders_committed"] == placed["committed"]
