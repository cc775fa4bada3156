"""$HALFMQ_URL and $HALFMQ_TOKEN: one set of names where the SDK, the CLI and the services find the broker."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from halfmq import Producer
from halfmq.services.order.config import OrderSettings
from tests.support.processes import ROOT, BrokerProcess, free_port, halfmq_command

pytestmark = pytest.mark.slow

CLEAN = ("HALFMQ_URL", "HALFMQ_BROKER_URL", "HALFMQ_TOKEN", "ORDER_BROKER_URL", "ORDER_BROKER_TOKEN")


@pytest.fixture(autouse=True)
def no_client_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in CLEAN:
        monkeypatch.delenv(name, raising=False)


def nobody() -> str:
    return f"http://127.0.0.1:{free_port()}"


@pytest.mark.parametrize("names", [{"HALFMQ_URL": "broker"}, {"HALFMQ_URL": "broker", "HALFMQ_BROKER_URL": "nobody"}], ids=str)
def test_the_sdk_finds_the_broker_in_the_environment(broker: BrokerProcess, monkeypatch: pytest.MonkeyPatch,
                                                      names: dict[str, str]) -> None:
    for name, where in names.items():
        monkeypatch.setenv(name, broker.url if where == "broker" else nobody())
    with Producer(retries=0) as producer:
        assert producer.send("ENV", {"found": "it"}).status.value == "SEND_OK"


def admin_topics(environ: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in CLEAN}
    return subprocess.run(halfmq_command("admin", "topics", "list", "--json"), cwd=ROOT, capture_output=True, text=True,
                          timeout=60, env={**clean, **environ})


@pytest.mark.parametrize("names", [{"HALFMQ_URL": "broker"}, {"HALFMQ_URL": "broker", "HALFMQ_BROKER_URL": "nobody"}], ids=str)
def test_halfmq_admin_finds_the_broker_in_the_environment(broker: BrokerProcess, names: dict[str, str]) -> None:
    done = admin_topics({name: broker.url if where == "broker" else nobody() for name, where in names.items()})
    assert done.returncode == 0, done.stderr
    assert "topics" in json.loads(done.stdout)


def test_the_services_take_halfmq_url_and_token_when_their_own_names_are_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HALFMQ_URL", "http://new:1")
    monkeypatch.setenv("HALFMQ_BROKER_URL", "http://old:1")
    monkeypatch.setenv("HALFMQ_TOKEN", "t-1")
    settings = OrderSettings()
    assert (settings.broker_url, settings.broker_token_value()) == ("http://new:1", "t-1")
    monkeypatch.delenv("HALFMQ_URL")
    assert OrderSettings().broker_url == "http://127.0.0.1:10911"  # the old $HALFMQ_BROKER_URL is read no more
    monkeypatch.setenv("ORDER_BROKER_URL", "http://own:1")
    monkeypatch.setenv("ORDER_BROKER_TOKEN", "own")
    assert (OrderSettings().broker_url, OrderSettings().broker_token_value()) == ("http://own:1", "own")
