"""Which Host a broker answers to (broker/serving/allowed_hosts.py): its own names, never a rebinding page's."""

from __future__ import annotations

import pytest

from halfmq.broker.serving.allowed_hosts import HostAllowList, host_name

LOOPBACK_BROKER = HostAllowList.for_server("127.0.0.1")


@pytest.mark.parametrize(("header", "name"), [
    ("localhost", "localhost"), ("LOCALHOST:10911", "localhost"), ("127.0.0.1:8080", "127.0.0.1"), ("[::1]:10911", "::1"),
    ("[::1]", "::1"), ("broker.internal.:443", "broker.internal"), (" evil.example ", "evil.example"),
])
def test_the_name_is_read_without_its_port_case_or_trailing_dot(header: str, name: str) -> None:
    assert host_name(header) == name


@pytest.mark.parametrize("header", ["", ":10911", "::1", "[::1", "[::1]x", "a:b:c", "localhost:", "localhost:80x", "localhost:\u0661"])
def test_a_malformed_host_has_no_name(header: str) -> None:
    assert host_name(header) is None


@pytest.mark.parametrize("header", ["localhost", "localhost:10911", "127.0.0.1:10911", "[::1]:10911", "LocalHost.", None])
def test_a_loopback_broker_answers_to_its_loopback_names_and_to_a_request_without_host(header: str | None) -> None:
    assert LOOPBACK_BROKER.allows(header)


@pytest.mark.parametrize("header", ["10.0.0.7:10911", "192.168.1.5", "[fe80::1]:10911"])
def test_an_ip_literal_is_always_answered_a_rebinding_page_has_a_name(header: str) -> None:
    assert LOOPBACK_BROKER.allows(header)


@pytest.mark.parametrize("header", ["evil.example", "evil.example:10911", "localhost.evil.example", "127.0.0.1.nip.io:10911",
                                    "localhost:10911:1", "[::1", ""])
def test_a_loopback_broker_refuses_any_other_name(header: str) -> None:
    assert not LOOPBACK_BROKER.allows(header)


def test_configured_names_bind_host_and_advertised_host_are_answered_too() -> None:
    allowed = HostAllowList.for_server("broker-1.lan", ["Broker.Internal", " "], "http://n1.set.example:10911")
    for header in ("broker.internal:10911", "broker-1.lan", "n1.set.example:10911", "localhost"):
        assert allowed.allows(header), header
    assert not allowed.allows("evil.example")


def test_a_star_answers_any_name() -> None:
    assert HostAllowList.for_server("127.0.0.1", ["*"]).allows("evil.example")


@pytest.mark.parametrize("bind", ["0.0.0.0", "::", "[::]"])
def test_a_broker_on_every_interface_answers_any_name_until_its_names_are_listed(bind: str) -> None:
    assert HostAllowList.for_server(bind).allows("broker:10911")
    listed = HostAllowList.for_server(bind, ["broker"])
    assert listed.allows("broker:10911") and listed.allows("127.0.0.1:10911") and not listed.allows("evil.example")
