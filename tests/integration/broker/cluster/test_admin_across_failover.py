"""`halfmq admin` during the incident it exists for (issue 45): with $HALFMQ_URL listing a set's three nodes, the leader first,
it reads and writes while that leader is kill -9'd and again once it is back as a follower, with the admin token
`halfmq up` wrote, and says which node answered.

Before, it asked only the first URL: "cannot reach the broker at <n1>" with n2 and n3 up, then "broker refused:
NOT_LEADER" once n1 followed; and without --token or $HALFMQ_TOKEN it sent no token at all.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from halfmq.cli.credentials import ensure_credentials
from tests.support.broker_set import BrokerSet
from tests.support.etcd import EtcdProcess
from tests.support.processes import halfmq_command
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.fixture
def operated_set(etcd: EtcdProcess, tmp_path: Path) -> Iterator[tuple[BrokerSet, Path]]:
    """Three nodes with auth on, and the operator's working directory: the tokens in ./data/auth, as `halfmq up` writes them."""
    workdir = tmp_path / "operator"
    creds, _ = ensure_credentials(workdir / "data" / "auth")
    brokers = BrokerSet(etcd, tmp_path, token=creds.token("admin"), env={
        "HALFMQ_BROKER_AUTH_FILE": str(creds.auth_file), "HALFMQ_BROKER_CLUSTER_TOKEN_FILE": str(creds.token_file("admin")),
    }).start()
    try:
        yield brokers, workdir
    finally:
        brokers.stop()


def _admin(workdir: Path, urls: list[str], *args: str) -> tuple[object, str]:
    """`halfmq admin ARGS --json` in ``workdir`` with only $HALFMQ_URL set: its answer, and the node it says answered."""
    env = {k: v for k, v in os.environ.items() if k not in ("HALFMQ_TOKEN", "HALFMQ_BROKER_AUTH_FILE")}
    env["HALFMQ_URL"] = ",".join(urls)
    done = subprocess.run(halfmq_command("admin", *args, "--json"), cwd=workdir, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"halfmq admin {' '.join(args)}: {done.stderr}"
    said = [line.removeprefix("answered by ") for line in done.stderr.splitlines() if line.startswith("answered by ")]
    assert len(said) == 1, done.stderr
    return json.loads(done.stdout), said[0]


def _topics(answer: object) -> set[str]:
    assert isinstance(answer, dict)
    return {t["name"] for t in answer["topics"]}


def test_admin_with_every_node_listed_reads_and_writes_through_a_kill_9_of_the_leader_and_its_return(
        operated_set: tuple[BrokerSet, Path]) -> None:
    brokers, workdir = operated_set
    first = brokers.leader()
    first_url = brokers.nodes[first].url
    urls = [first_url, *(node.url for name, node in brokers.nodes.items() if name != first)]  # the leader first: asked first
    _, by = _admin(workdir, urls, "topics", "create", "BEFORE")
    assert by == first_url

    brokers.nodes[first].kill9()
    listed, by = _admin(workdir, urls, "topics", "list")  # a read any node serves: a follower answers it, election or not
    assert "BEFORE" in _topics(listed) and by in urls[1:]
    created, by = _admin(workdir, urls, "topics", "create", "DURING")  # a write: on the leader elected meanwhile
    leader = brokers.leader(not_=first)
    assert isinstance(created, dict) and created["name"] == "DURING" and by == brokers.nodes[leader].url

    brokers.nodes[first].start(timeout=60)
    wait_for(lambda: (brokers.view(first) or {}).get("role") == "follower", timeout=60)
    brokers.caught_up()
    listed, by = _admin(workdir, urls, "topics", "list")  # the first node listed, a follower now, serves it
    assert {"BEFORE", "DURING"} <= _topics(listed) and by == first_url
    created, by = _admin(workdir, urls, "topics", "create", "AFTER")  # its 421 names the leader, which takes it
    assert isinstance(created, dict) and created["name"] == "AFTER" and by == brokers.nodes[leader].url
    groups, by = _admin(workdir, urls, "groups", "list")  # a read only the leader serves
    assert groups == {"count": 0, "groups": []} and by == brokers.nodes[leader].url
