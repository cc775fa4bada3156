"""`halfmq up --replicas N`: a local etcd, N broker nodes of one set, the services pointed at all of them."""

from __future__ import annotations

from pathlib import Path

from halfmq.cli.main import build_parser
from halfmq.cli.up_command import Topology, topology_from


def test_one_replica_is_the_single_broker_as_before() -> None:
    names = [c.name for c in Topology(Path("/tmp/d")).components()]
    assert names == ["broker", "order", "credit"]


def test_three_replicas_start_etcd_and_three_nodes_and_give_the_services_every_url() -> None:
    args = build_parser().parse_args(["up", "--replicas", "3", "--data-dir", "/tmp/d", "--etcd-port", "23790"])
    components = {c.name: c for c in topology_from(args).components()}
    assert list(components) == ["etcd", "broker-n1", "broker-n2", "broker-n3", "order", "credit"]
    assert "--listen-client-urls" in components["etcd"].argv and "http://127.0.0.1:23790" in components["etcd"].argv
    node = components["broker-n2"].env
    assert node["HALFMQ_BROKER_CLUSTER"] == "etcd://127.0.0.1:23790/halfmq" and node["HALFMQ_BROKER_NODE_ID"] == "n2"
    assert node["HALFMQ_BROKER_PORT"] == "10912" and node["HALFMQ_BROKER_ADVERTISE_URL"] == "http://127.0.0.1:10912"
    assert node["HALFMQ_BROKER_CLUSTER_TOKEN_FILE"].endswith("admin.token")  # auth is on by default: nodes fetch as admin
    every = "http://127.0.0.1:10911,http://127.0.0.1:10912,http://127.0.0.1:10913"
    assert components["order"].env["ORDER_BROKER_URL"] == every and components["credit"].env["CREDIT_BROKER_URL"] == every


def test_up_leaves_the_grpc_port_to_each_broker_unless_given_and_then_gives_node_i_port_plus_i() -> None:
    assert "HALFMQ_BROKER_GRPC_PORT" not in Topology(Path("/tmp/d")).components()[0].env
    args = build_parser().parse_args(["up", "--replicas", "3", "--data-dir", "/tmp/d", "--grpc-port", "9100"])
    nodes = [c for c in topology_from(args).components() if c.name.startswith("broker")]
    assert [n.env["HALFMQ_BROKER_GRPC_PORT"] for n in nodes] == ["9100", "9101", "9102"]
    off = topology_from(build_parser().parse_args(["up", "--data-dir", "/tmp/d", "--grpc-port", "0"])).components()[0]
    assert off.env["HALFMQ_BROKER_GRPC_PORT"] == "0"
