"""docker-compose.yml is valid compose, health-gated, and passes only settings that exist."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from jsonschema import Draft7Validator

from halfmq.broker.config import BrokerSettings
from halfmq.services.credit.config import CreditSettings
from halfmq.services.order.config import OrderSettings
from tests.support.compose import published_ports

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "tests" / "data" / "compose-spec.json"  # the compose-spec project's schema, carried by the repo
LONG_RUNNING = {"postgres", "broker", "order", "credit", "spark"}
ONE_SHOT = {"auth-init"}  # makes the tokens on the first `up`, then exits
MONITORING = {"prometheus", "grafana"}  # the opt-in `monitoring` profile (tests/test_monitoring_files.py)


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def settings_fields() -> dict[str, set[str]]:
    from halfmq.jobs.credit_aggregate import AggregateSettings

    fields = {
        "HALFMQ_BROKER_": set(BrokerSettings.model_fields),
        "ORDER_": set(OrderSettings.model_fields),
        "CREDIT_": set(CreditSettings.model_fields),
    }
    aggregate_env = {
        (f.validation_alias if isinstance(f.validation_alias, str) else name).upper()
        for name, f in AggregateSettings.model_fields.items()
    }
    return fields | {"": {n.lower() for n in aggregate_env}}


def test_compose_file_matches_the_compose_spec(compose: dict) -> None:
    errors = sorted(Draft7Validator(json.loads(SCHEMA.read_text())).iter_errors(compose), key=str)
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:10])


def test_every_long_running_service_has_a_health_check(compose: dict) -> None:
    services = compose["services"]
    assert set(services) == LONG_RUNNING | ONE_SHOT | MONITORING
    for name in LONG_RUNNING:
        assert "healthcheck" in services[name], f"{name} has no healthcheck"


def test_dependencies_wait_for_health(compose: dict) -> None:
    for name, service in compose["services"].items():
        for dep, spec in (service.get("depends_on") or {}).items():
            wanted = "service_completed_successfully" if dep in ONE_SHOT else "service_healthy"
            assert spec == {"condition": wanted}, f"{name} -> {dep} does not wait for {wanted}"
    assert set(compose["services"]["order"]["depends_on"]) == {"broker", "postgres"}


def test_every_setting_passed_exists_in_a_settings_class(compose: dict) -> None:
    fields = settings_fields()
    for name, service in compose["services"].items():
        if name == "postgres" or name in MONITORING:  # images of their own, with their own settings
            continue
        for var in service.get("environment", {}):
            if var.startswith(("HALFMQ_BROKER_", "ORDER_", "CREDIT_")):
                prefix = next(p for p in ("HALFMQ_BROKER_", "ORDER_", "CREDIT_") if var.startswith(p))
                owner = {"broker": "HALFMQ_BROKER_", "order": "ORDER_", "credit": "CREDIT_"}.get(name)
                if owner is not None:
                    assert prefix == owner, f"{name} is given {var}, a setting of another component"
                    assert var[len(prefix):].lower() in fields[prefix], f"{name}: {var} is not a setting"
                    continue
            assert var.lower() in fields[""] , f"{name}: {var} is not a setting of the Spark job"


def test_service_urls_point_at_compose_service_names(compose: dict) -> None:
    env = compose["services"]["order"]["environment"]
    assert env["ORDER_BROKER_URL"] == "http://broker:10911"
    assert env["ORDER_PUBLIC_URL"].startswith("http://order:")
    assert "http://order:8001" in compose["services"]["broker"]["environment"]["HALFMQ_BROKER_CHECK_URL_ALLOW"].split(",")


def test_no_token_or_secret_is_written_in_the_compose_file(compose: dict) -> None:
    """Services read them from files the auth-init service makes into a volume on the first `up`."""
    broker = compose["services"]["broker"]["environment"]
    assert broker["HALFMQ_BROKER_AUTH_FILE"].startswith("/data/auth/")
    for name, service in compose["services"].items():
        for var, value in (service.get("environment") or {}).items():
            if "TOKEN" in var or "SECRET" in var:
                assert var.endswith("_FILE") and str(value).startswith("/data/auth/"), f"{name}: {var} is given in plain text"


def test_the_image_creates_every_mount_point_of_its_volumes_for_its_user(compose: dict) -> None:
    """Docker creates a missing mount point owned by root, and the halfmq image runs as halfmq."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    listed = re.search(r'^ARG DATA_DIRS="([^"]*)"$', dockerfile, re.M)
    assert listed and "install -d -o halfmq -g halfmq $DATA_DIRS" in dockerfile, "the Dockerfile does not create its data dirs"
    owned = set(listed.group(1).split())
    for name, service in compose["services"].items():
        if "build" not in service:
            continue  # an image of its own (postgres) prepares its data dir
        for volume in service.get("volumes", []):
            target = volume.split(":")[1]
            assert target in owned, f"{name} mounts a volume at {target}, which the image does not create for halfmq"


def test_debians_docker_compose_1_29_accepts_the_file() -> None:
    """Debian bookworm's `docker-compose` refuses keys newer than it, such as a top-level `name:`."""
    if shutil.which("docker-compose") is None:
        if os.environ.get("CI"):
            pytest.fail("docker-compose is not installed (bin/setup --with-docker installs it)")
        pytest.skip("docker-compose is not installed")
    checked = subprocess.run(["docker-compose", "-f", str(ROOT / "docker-compose.yml"), "config", "--quiet"],
                             cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stderr


def test_the_image_installs_the_kafka_extra_the_brokers_kafka_front_needs() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    extras = re.search(r"for x in \(([^)]*)\)", dockerfile)
    assert extras and '"kafka"' in extras.group(1).split(", "), "the image would start the broker with its Kafka front off"


def test_the_brokers_kafka_listener_is_published_and_advertised_at_the_published_address(compose: dict) -> None:
    """A client on the host is sent by Metadata to the address it can reach, not to the container's name."""
    broker = compose["services"]["broker"]
    env = broker["environment"]
    assert env["HALFMQ_BROKER_KAFKA_PORT"] == "9092"
    assert env["HALFMQ_BROKER_KAFKA_ADVERTISE"] == "127.0.0.1:${HALFMQ_COMPOSE_KAFKA_PORT:-9092}"
    assert "127.0.0.1:${HALFMQ_COMPOSE_KAFKA_PORT:-9092}:9092" in broker["ports"]


def test_a_moved_kafka_port_moves_the_published_port_and_the_advertised_address_together() -> None:
    if shutil.which("docker-compose") is None:
        pytest.skip("docker-compose is not installed")
    checked = subprocess.run(["docker-compose", "-f", str(ROOT / "docker-compose.yml"), "config"], cwd=ROOT, capture_output=True,
                             text=True, timeout=60, env={**os.environ, "HALFMQ_COMPOSE_KAFKA_PORT": "19092"})
    assert checked.returncode == 0, checked.stderr
    broker = yaml.safe_load(checked.stdout)["services"]["broker"]
    assert broker["environment"]["HALFMQ_BROKER_KAFKA_ADVERTISE"] == "127.0.0.1:19092"
    assert published_ports(broker)["9092"] == "19092"

