"""docker-compose.replicated.yml: etcd and three broker nodes over the base file, passing only settings that exist."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from jsonschema import Draft7Validator

from halfmq.broker.config import BrokerSettings
from tests.support.compose import published_ports

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "tests" / "data" / "compose-spec.json"
NODES = ("broker", "broker-n2", "broker-n3")


@pytest.fixture(scope="module")
def overlay() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.replicated.yml").read_text())


def test_the_overlay_matches_the_compose_spec(overlay: dict) -> None:
    errors = sorted(Draft7Validator(json.loads(SCHEMA.read_text())).iter_errors(overlay), key=str)
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:10])


def test_three_nodes_of_one_set_each_with_its_own_id_url_and_data_volume(overlay: dict) -> None:
    services = overlay["services"]
    envs = [services[n]["environment"] for n in NODES]
    assert {e["HALFMQ_BROKER_NODE_ID"] for e in envs} == {"n1", "n2", "n3"}
    assert [e["HALFMQ_BROKER_ADVERTISE_URL"] for e in envs] == [f"http://{n}:10911" for n in NODES]
    assert {e["HALFMQ_BROKER_CLUSTER"] for e in envs} == {"etcd://etcd:2379/halfmq"}
    assert {e["HALFMQ_BROKER_CLUSTER_SIZE"] for e in envs} == {"3"}
    fields = set(BrokerSettings.model_fields)
    for env in envs:
        for var in env:
            assert var.startswith("HALFMQ_BROKER_") and var[len("HALFMQ_BROKER_"):].lower() in fields, var
    assert {services[n]["volumes"][0].split(":")[0] for n in NODES[1:]} == {"broker-n2-data", "broker-n3-data"}
    for name in (*NODES, "etcd"):
        assert services[name].get("depends_on", {}).get("etcd", {"condition": "service_healthy"}) == {"condition": "service_healthy"}
    assert "healthcheck" in services["etcd"]


def test_the_services_get_every_node_and_no_secret_in_plain_text(overlay: dict) -> None:
    services = overlay["services"]
    every = ",".join(f"http://{n}:10911" for n in NODES)
    assert services["order"]["environment"]["ORDER_BROKER_URL"] == every
    assert services["credit"]["environment"]["CREDIT_BROKER_URL"] == every
    for name, service in services.items():
        for var, value in (service.get("environment") or {}).items():
            if "TOKEN" in var or "SECRET" in var:
                assert var.endswith("_FILE") and str(value).startswith("/data/auth/"), f"{name}: {var} is given in plain text"


def test_debians_docker_compose_1_29_merges_it_over_the_base_file() -> None:
    if shutil.which("docker-compose") is None:
        pytest.skip("docker-compose is not installed")
    checked = subprocess.run(["docker-compose", "-f", "docker-compose.yml", "-f", "docker-compose.replicated.yml", "config"],
                             cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stderr
    merged = yaml.safe_load(checked.stdout)["services"]
    assert merged["broker"]["environment"]["HALFMQ_BROKER_NODE_ID"] == "n1"
    assert merged["broker"]["environment"]["HALFMQ_BROKER_AUTH_FILE"] == "/data/auth/auth.json"
    assert set(merged["broker"]["depends_on"]) == {"auth-init", "etcd"}


def test_each_node_publishes_its_kafka_listener_on_its_own_host_port_and_advertises_it() -> None:
    """Only the leader listens; a client given the three published addresses is sent by Metadata to the leader's."""
    if shutil.which("docker-compose") is None:
        pytest.skip("docker-compose is not installed")
    ports = {"broker": "19092", "broker-n2": "19093", "broker-n3": "19094"}
    checked = subprocess.run(["docker-compose", "-f", "docker-compose.yml", "-f", "docker-compose.replicated.yml", "config"],
                             cwd=ROOT, capture_output=True, text=True, timeout=60,
                             env={**os.environ, "HALFMQ_COMPOSE_KAFKA_PORT": ports["broker"], "HALFMQ_COMPOSE_KAFKA_N2_PORT": ports["broker-n2"],
                                  "HALFMQ_COMPOSE_KAFKA_N3_PORT": ports["broker-n3"]})
    assert checked.returncode == 0, checked.stderr
    merged = yaml.safe_load(checked.stdout)["services"]
    for node, port in ports.items():
        env = merged[node]["environment"]
        assert env["HALFMQ_BROKER_KAFKA_PORT"] == "9092"
        assert env["HALFMQ_BROKER_KAFKA_ADVERTISE"] == f"127.0.0.1:{port}"
        assert published_ports(merged[node])["9092"] == port
