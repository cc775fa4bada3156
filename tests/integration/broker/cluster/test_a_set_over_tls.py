"""A broker set whose members serve HTTPS with a private CA: the nodes verify each other with HALFMQ_BROKER_PEER_CA_FILE.

The replication stream is a WebSocket over TLS (wss) to the leader, the calls around it (term ends, positions, the
dead-leader probe) HTTPS; both servers carry it. A member that does not trust the set's CA refuses to follow (its view
and its log say why) and never falls back to plain http: the set goes on with the two that trust each other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.broker_set import BrokerSet
from tests.support.etcd import EtcdProcess
from tests.support.tls import TlsFiles, make_ca_and_server_cert
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow

TOPIC = "over_tls"


@pytest.fixture
def tls(tmp_path: Path) -> TlsFiles:
    return make_ca_and_server_cert(tmp_path / "tls")


def _until(condition: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    wait_for(condition, timeout, interval=0.1, what=what)


def _send(http: httpx.Client, url: str, bodies: list[str]) -> list[dict]:
    answer = http.post(f"{url}/v1/topics/{TOPIC}/messages", json={"messages": [{"body": b} for b in bodies]})
    assert answer.status_code == 200, answer.text
    return answer.json()["results"]


def _read_all(http: httpx.Client, url: str) -> list[str]:
    topic = http.get(f"{url}/v1/topics/{TOPIC}")
    if topic.status_code == 404:  # (a follower that has not got the topic's record yet)
        return []
    bodies: list[str] = []
    for queue in topic.json()["queues"]:
        answer = http.get(f"{url}/v1/topics/{TOPIC}/queues/{queue['queue_id']}/messages", params={"offset": 0, "max": 1000})
        bodies += [m["body"] for m in answer.json()["messages"]]
    return sorted(bodies)


@pytest.fixture(params=["uvicorn", "granian"])
def tls_set(request: pytest.FixtureRequest, etcd: EtcdProcess, tmp_path: Path, tls: TlsFiles) -> Iterator[BrokerSet]:
    brokers = BrokerSet(etcd, tmp_path, tls=tls, env={"HALFMQ_BROKER_HTTP_SERVER": request.param}).start()
    try:
        yield brokers
    finally:
        brokers.stop()


def test_a_set_over_https_elects_replicates_and_keeps_every_acknowledged_message_after_kill_9_of_its_leader(
        tls_set: BrokerSet) -> None:
    assert all(url.startswith("https://") for url in tls_set.urls)
    leader = tls_set.leader()
    with httpx.Client(verify=tls_set.verify, timeout=10) as http:
        big = [f"{i}" * 200_000 for i in range(3)]  # runs of hundreds of KiB: WebSocket messages over many TLS records
        acked = [r for i in range(10) for r in _send(http, tls_set.nodes[leader].url, [f"m{i}-{j}" for j in range(3)])]
        acked += _send(http, tls_set.nodes[leader].url, big)
        assert {r["status"] for r in acked} == {"SEND_OK"} and len(acked) == 33  # quorum acks: a follower has them on disk
        expected = sorted([f"m{i}-{j}" for i in range(10) for j in range(3)] + big)
        follower = next(n for n in tls_set.nodes if n != leader)
        _until(lambda: _read_all(http, tls_set.nodes[follower].url) == expected, "a follower serves every acknowledged message")
        tls_set.nodes[leader].kill9()
        new = tls_set.leader(timeout=20, not_=leader)
        assert _read_all(http, tls_set.nodes[new].url) == expected
        assert {r["status"] for r in _send(http, tls_set.nodes[new].url, ["after"])} == {"SEND_OK"}


def test_a_member_that_does_not_trust_the_sets_ca_refuses_to_follow_and_never_falls_back_to_http(
        etcd: EtcdProcess, tmp_path: Path, tls: TlsFiles) -> None:
    stranger = make_ca_and_server_cert(tmp_path / "another-ca")
    brokers = BrokerSet(etcd, tmp_path, tls=tls)
    brokers.nodes["n3"].env["HALFMQ_BROKER_PEER_CA_FILE"] = str(stranger.ca)
    try:
        for node_id in ("n1", "n2"):  # a set that already leads (a set with nothing acknowledged may elect any node first)
            brokers.nodes[node_id].start(timeout=60)
        leader = brokers.leader()
        brokers.nodes["n3"].start(timeout=60)
        with httpx.Client(verify=brokers.verify, timeout=10) as http:
            assert {r["status"] for r in _send(http, brokers.nodes[leader].url, ["one", "two"])} == {"SEND_OK"}

        def refused() -> bool:
            view = brokers.view("n3")
            return bool(view and view.get("replication_error") and "certificate" in view["replication_error"])

        _until(refused, "n3's view says its replication fails on the leader's certificate")
        view = brokers.view("n3")
        assert view is not None and view["log_end"] == 0 and view["role"] == "follower"
        assert brokers.nodes[leader].url in view["replication_error"]  # the leader's https URL, not another
        leading = brokers.view(leader)
        assert leading is not None and "n3" not in leading["in_sync"]
        log = brokers.nodes["n3"].log_path.read_text()
        assert "certificate verify failed" in log
        assert not any(f"http://127.0.0.1:{node.port}" in log for node in brokers.nodes.values())  # no plain-http call named
        assert log.count("certificate verify failed") == 1  # said when it starts failing, not at every retry (5 a second)
    finally:
        brokers.stop()
