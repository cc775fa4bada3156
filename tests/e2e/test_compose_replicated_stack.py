"""The replicated compose stack for real: the base file plus docker-compose.replicated.yml on a Docker engine.

etcd with authentication, three broker nodes (n1 is the base file's `broker`), order and credit
pointed at all three, each node's Kafka listener published on the host. Orders are placed, the leading node is `docker kill -s KILL`ed while orders
keep coming, another node takes over, and every committed order is credited exactly once; the
killed node is started again and follows. The engine and the base images are found or made as in
test_compose_stack.py (stand-ins from Debian packages where no registry answers, etcd's among
them). On CI this never skips.
"""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from confluent_kafka import Consumer as KafkaConsumer
from confluent_kafka import Producer as KafkaProducer
from confluent_kafka import TopicPartition

from tests.support.compose import COMPOSE_FILE, REPLICATED_OVERLAY, ComposeStack, base_images
from tests.support.compose_orders import assert_credited_exactly_once, place, settled
from tests.support.docker_engine import DockerEngine
from tests.support.processes import free_port
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]
FIGURES_TITLE = "replicated compose stack figures:"  # the header conftest's `figures` prints

PROJECT = "halfmq-replicated-test"
NODES = ["broker", "broker-n2", "broker-n3"]  # services; node ids n1, n2, n3
SERVICES = ["etcd", "postgres", *NODES, "order", "credit"]  # not spark: nothing here needs it
ADMIN_TOKEN = "/data/auth/admin.token"  # in the auth volume, which every halfmq container mounts
KAFKA_PORTS = {"broker": "kafka", "broker-n2": "kafka_n2", "broker-n3": "kafka_n3"}  # HALFMQ_COMPOSE_KAFKA[_N2|_N3]_PORT
ORDERS_BEFORE = 10
PENDING_AT_THE_KILL = 3  # drop-end orders: committed, end never sent; checked back 6 s on (transaction_timeout), so by the new leader


@pytest.fixture(scope="module")
def stack(engine: DockerEngine, figures: dict[str, str]) -> Iterator[ComposeStack]:
    env = engine.env() | {"DOCKER_BUILDKIT": "0", "COMPOSE_DOCKER_CLI_BUILD": "1"}  # the classic builder: no buildx here
    ports = {service: free_port() for service in ("broker", "order", "credit", *KAFKA_PORTS.values())}
    compose = ComposeStack(PROJECT, env, ports, files=(COMPOSE_FILE, REPLICATED_OVERLAY))
    figures["compose"] = f"{' '.join(compose.command)} {compose.version()}"
    started = time.monotonic()
    made = base_images(compose.env)
    figures["base images"] = f"{time.monotonic() - started:.1f} s: {made}"

    compose("down", "-v", "--remove-orphans")  # what a killed earlier run may have left
    started = time.monotonic()
    compose("build", timeout=2400)
    figures["build"] = f"{time.monotonic() - started:.1f} s"
    started = time.monotonic()
    up = compose("up", "-d", *SERVICES, timeout=600, check=False)
    assert up.returncode == 0, f"up -d exited {up.returncode}:\n{up.stderr[-2000:]}\n{compose.logs()}"
    compose.wait_healthy(SERVICES, timeout=240)
    figures["time to healthy (etcd, postgres, 3 nodes, order, credit)"] = f"{time.monotonic() - started:.1f} s"
    try:
        yield compose
    finally:
        compose("down", "-v", "--remove-orphans", timeout=300, check=False)


@pytest.fixture(scope="module")
def killed() -> dict[str, str]:
    """The node the failover test killed ({"service", "leader"}), for the rejoin test."""
    return {}


def cluster_view(stack: ComposeStack, service: str) -> dict[str, Any] | None:
    """GET /v1/cluster of ``service``'s node, asked from the order container; None when it does not answer."""
    status, view = stack.http_from("order", "GET", f"http://{service}:10911/v1/cluster", token_file=ADMIN_TOKEN)
    return view if status == 200 else None


def leading_service(stack: ComposeStack, asked: str, not_this: str | None = None) -> str | None:
    """The service of the leader ``asked`` follows or is, once that leader says it is writable (and is not ``not_this``)."""
    view = cluster_view(stack, asked)
    if not view or not view.get("leader"):
        return None
    leader = urlsplit(view["leader"]["url"]).hostname
    if leader == not_this or leader not in NODES:
        return None
    own = view if leader == asked else cluster_view(stack, leader)
    return leader if own and own["role"] == "leader" and own["writable"] else None


class Placer(threading.Thread):
    """Places one order after another until stopped; each as (user, status, started at, answered at)."""

    def __init__(self, stack: ComposeStack, run: str) -> None:
        super().__init__(daemon=True)
        self.stack, self.run_id = stack, run
        self.stop = threading.Event()
        self.placed: list[tuple[str, int | None, float, float]] = []

    def run(self) -> None:
        with httpx.Client() as client:
            while not self.stop.is_set() and len(self.placed) < 2000:
                user = f"r{self.run_id}-during-{len(self.placed)}"
                started = time.monotonic()
                status = place(client, self.stack, user)
                self.placed.append((user, status, started, time.monotonic()))
                time.sleep(0.05)

    def accepted_since(self, moment: float) -> int:
        return sum(1 for _, status, started, _ in self.placed if started > moment and status == 201)

    def longest_refusal(self) -> float:
        """The longest time between two accepted orders' answers: how long clients could not place one."""
        answered = sorted(done for _, status, _, done in self.placed if status == 201)
        return max((b - a for a, b in itertools.pairwise(answered)), default=0.0)


def test_an_anonymous_etcd_put_is_refused(stack: ComposeStack) -> None:
    body = {"key": "L2hhbGZtcS9sZWFkZXI=", "value": "bWluZQ=="}  # /halfmq/leader = "mine", base64 as the gateway wants
    status, answer = stack.http_from("order", "POST", "http://etcd:2379/v3/kv/put", body)
    assert status in (400, 401), f"etcd answered an anonymous put with {status}: {answer}"
    assert "user name is empty" in str(answer), answer


def test_a_kafka_client_on_the_host_given_every_nodes_published_port_is_sent_to_the_leaders(stack: ComposeStack, figures: dict[str, str]) -> None:
    """Each node publishes its Kafka listener and advertises it; every node listens, and Metadata names every node at its
    published port and the leader's as the partition's leader (docs/kafka.md, "In a broker set")."""
    leader = wait_for(lambda: leading_service(stack, "broker"), timeout=60, interval=0.5)
    token = stack("exec", "-T", "broker", "cat", ADMIN_TOKEN).stdout.strip()
    client = {"bootstrap.servers": ",".join(f"127.0.0.1:{stack.ports[k]}" for k in KAFKA_PORTS.values()),
              "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "admin", "sasl.password": token}
    topic = f"REPLICATED_KAFKA_{uuid.uuid4().hex[:6].upper()}"
    status, answer = stack.http_from("order", "POST", f"http://{leader}:10911/v1/topics", {"name": topic, "queues": 1}, token_file=ADMIN_TOKEN)
    assert status == 201, answer  # on the leader, with one queue (auto-creation from Metadata takes the broker's default)
    started = time.monotonic()
    producer = KafkaProducer({**client, "message.timeout.ms": 60_000, "enable.idempotence": True})
    published = {service: ("127.0.0.1", stack.ports[port]) for service, port in KAFKA_PORTS.items()}

    def named() -> tuple[list[tuple[str, int]], tuple[str, int] | None]:
        metadata = producer.list_topics(topic, timeout=30)
        partition = metadata.topics[topic].partitions.get(0)
        partition_leader = metadata.brokers.get(partition.leader) if partition is not None else None
        return sorted((b.host, b.port) for b in metadata.brokers.values()), (partition_leader.host, partition_leader.port) if partition_leader else None

    # a node learns the others' Kafka addresses from their etcd registrations, within a second of the set's start
    brokers, partition_leader = wait_for(lambda: (seen := named())[0] == sorted(published.values()) and seen, timeout=30)
    assert partition_leader == published[leader]
    delivered: list[str] = []
    for i in range(10):
        producer.produce(topic, f"r{i}".encode(), partition=0, on_delivery=lambda err, msg: delivered.append(str(err) if err else "ok"))
    assert producer.flush(60) == 0 and delivered == ["ok"] * 10
    consumer = KafkaConsumer({**client, "group.id": f"replicated-{topic.lower()}", "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0)])
        got: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(got) < 10 and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                got.append(message.value())
        assert got == [f"r{i}".encode() for i in range(10)]
    finally:
        consumer.close()
    figures["kafka client on the host (10 produced and consumed through the leader)"] = f"{time.monotonic() - started:.1f} s ({leader})"


def test_orders_are_credited_exactly_once_across_a_docker_kill_of_the_leading_node(
    stack: ComposeStack, figures: dict[str, str], killed: dict[str, str]
) -> None:
    run = uuid.uuid4().hex[:6]
    leader = wait_for(lambda: leading_service(stack, "broker-n3"), timeout=60, interval=1.0)
    acked: list[str] = []  # answered 201: exactly one order, credited once
    refused: list[str] = []  # answered 503: no order, no credit
    unknown: list[str] = []  # no answer, or another status: at most one order, credited if it exists
    with httpx.Client() as client:
        for i in range(ORDERS_BEFORE):
            user = f"r{run}-before-{i}"
            assert place(client, stack, user) == 201
            acked.append(user)
        pending = [f"r{run}-pending-{i}" for i in range(PENDING_AT_THE_KILL)]
        pending_from = time.monotonic()
        for user in pending:  # committed; the leader about to die holds their half messages, unresolved
            assert place(client, stack, user, "drop-end") == 201
        acked += pending

        placer = Placer(stack, run)
        placer.start()
        time.sleep(1.0)
        stack.docker("kill", "-s", "KILL", stack.container(leader))
        at_kill = time.monotonic()
        killed.update(service=leader)
        survivor = next(n for n in NODES if n != leader)
        new_leader = wait_for(lambda: leading_service(stack, survivor, not_this=leader), timeout=90, interval=0.5)
        seen_leading = time.monotonic()
        killed.update(leader=new_leader)
        wait_for(lambda: placer.accepted_since(seen_leading) >= 20, timeout=120, interval=0.5)
        placer.stop.set()
        placer.join(90)
        assert not placer.is_alive()
        assert stack.state(leader)["Status"] == "exited", "the killed node came back: docker kill is a manual stop"

        after = [(user, status) for user, status, started, _ in placer.placed if started > seen_leading]
        assert all(status == 201 for _, status in after), f"orders placed after {new_leader} led were not all accepted: {after}"
        statuses: dict[str, int] = {}
        for user, status, _, _ in placer.placed:
            {201: acked, 503: refused}.get(status, unknown).append(user)
            statuses[str(status)] = statuses.get(str(status), 0) + 1
        figures["failover"] = (
            f"{leader} killed {at_kill - pending_from:.1f} s after the first drop-end order was sent; {new_leader} seen leading and "
            f"writable {seen_leading - at_kill:.1f} s after the kill; longest time without an accepted order {placer.longest_refusal():.1f} s"
        )
        figures["orders during the kill"] = ", ".join(f"{n} x {s}" for s, n in sorted(statuses.items()))

        started = time.monotonic()
        users = acked + refused + unknown
        seen = wait_for(lambda: settled(client, stack, users), timeout=180, interval=1.0)
        figures["time to settle every credit"] = f"{time.monotonic() - started:.1f} s"
    committed = assert_credited_exactly_once(seen, acked, refused, unknown)
    figures["orders committed / credited"] = (
        f"{committed} / {sum(len(c) for _, c in seen.values())} (each credited exactly once; "
        f"{PENDING_AT_THE_KILL} drop-end orders settled by the new leader's check-back)"
    )


def test_the_killed_node_starts_again_as_a_follower_and_catches_up(stack: ComposeStack, killed: dict[str, str]) -> None:
    if "leader" not in killed:
        pytest.skip("the failover test did not get as far as a new leader")
    stack("start", killed["service"])
    stack.wait_healthy([killed["service"]], timeout=120)

    def caught_up() -> bool:
        view, lead = cluster_view(stack, killed["service"]), cluster_view(stack, killed["leader"])
        return bool(view and lead and view["role"] == "follower" and view["leader"]["url"] == f"http://{killed['leader']}:10911"
                    and view["durable_offset"] == lead["durable_offset"])

    wait_for(caught_up, timeout=120, interval=1.0)
