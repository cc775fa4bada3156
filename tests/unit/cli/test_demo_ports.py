"""The demo's own `up` takes the asked-for ports where free, free ones where a default is taken, and never a taken port it was given."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from halfmq.cli.demo.command import own_ports
from halfmq.cli.demo.ports import PortTaken, Wanted, choose
from halfmq.cli.main import build_parser


def free_runs(*starts: int) -> Iterator[int]:
    yield from starts


def picker(*starts: int):
    runs = free_runs(*starts)
    asked: list[tuple[int, set[int]]] = []

    def free_run(count: int, avoid: set[int]) -> int:
        asked.append((count, set(avoid)))
        return next(runs)

    free_run.asked = asked  # type: ignore[attr-defined]
    return free_run


def test_free_default_ports_are_kept() -> None:
    choice = choose([Wanted("--broker-port", 10911), Wanted("--order-port", 8001)], lambda p: False, picker())
    assert choice.ports == {"--broker-port": 10911, "--order-port": 8001} and choice.moved == []


def test_a_taken_default_port_moves_to_a_free_one_and_says_so() -> None:
    choice = choose([Wanted("--broker-port", 10911, count=3), Wanted("--order-port", 8001)], {10912}.__contains__, picker(40000))
    assert choice.ports == {"--broker-port": 40000, "--order-port": 8001}
    assert choice.moved == ["port 10912 (--broker-port) is taken by another process: the demo uses 40000 instead"]
    assert choice.used == {40000, 40001, 40002, 8001}


def test_a_taken_port_the_user_gave_is_refused_in_one_line() -> None:
    with pytest.raises(PortTaken) as refused:
        choose([Wanted("--broker-port", 10911, given=True)], {10911}.__contains__, picker())
    assert "port 10911 (--broker-port) is taken" in str(refused.value) and "\n" not in str(refused.value)


def test_a_port_chosen_earlier_counts_as_taken() -> None:
    first = choose([Wanted("--broker-port", 30000, count=2)], lambda p: False, picker())
    free_run = picker(50000)
    second = choose([Wanted("--grpc-port", 30001)], lambda p: False, free_run, after=first)
    assert second.ports == {"--broker-port": 30000, "--grpc-port": 50000}
    assert free_run.asked == [(1, {30000, 30001})]  # type: ignore[attr-defined]


def demo_args(*argv: str):
    return build_parser().parse_args(["demo", *argv])


def test_the_demo_moves_every_taken_default_and_derives_the_grpc_port_from_the_broker_port_it_got() -> None:
    taken = {10911, 8081, 8002}
    runs = iter([41000, 42000])
    choice = own_ports(demo_args(), lambda host, port: port in taken, lambda host, count, avoid: next(runs))
    assert choice.ports == {"--broker-port": 41000, "--order-port": 8001, "--credit-port": 42000, "--grpc-port": 41000 - 2830}


def test_the_demo_refuses_a_given_broker_port_that_is_taken() -> None:
    with pytest.raises(PortTaken, match=r"port 10911 \(--broker-port\)"):
        own_ports(demo_args("--broker-port", "10911"), lambda host, port: port == 10911, lambda host, count, avoid: 1 / 0)


def test_the_demo_keeps_a_replicated_sets_ports_consecutive() -> None:
    choice = own_ports(demo_args("--replicas", "3"), lambda host, port: port == 2380, lambda host, count, avoid: 43000)
    assert choice.ports == {"--broker-port": 10911, "--order-port": 8001, "--credit-port": 8002, "--etcd-port": 43000, "--grpc-port": 8081}
    assert {8081, 8082, 8083, 10913, 43001} <= choice.used
