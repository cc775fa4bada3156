"""serve_checks: a producer's check endpoint on a daemon thread, and a clear error when its port is taken."""

from __future__ import annotations

import socket
import urllib.request

import pytest

from halfmq import TransactionProducer
from halfmq.client.check_server import CheckPortBusy, serve_checks


class NeverAsked:
    def execute_local_transaction(self, message: object, arg: object) -> None:
        raise AssertionError("not called")

    def check_local_transaction(self, message: object) -> None:
        raise AssertionError("not called")


def producer() -> TransactionProducer:
    return TransactionProducer("http://127.0.0.1:9", "pg", NeverAsked(), check_backs=False)


def test_a_taken_port_is_an_error_naming_the_port_not_a_hang() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(CheckPortBusy, match=f"port {port} on 127.0.0.1 is in use"):
            serve_checks(producer().check_app(), port)


def test_the_check_endpoint_is_served_once_serve_checks_returns() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = serve_checks(producer().check_app(), port)
    try:
        with pytest.raises(urllib.request.HTTPError) as answered:  # a GET is not a check-back: the app answers 4xx
            urllib.request.urlopen(f"http://127.0.0.1:{port}/halfmq/check", timeout=5)
        assert 400 <= answered.value.code < 500
    finally:
        server.stop()
