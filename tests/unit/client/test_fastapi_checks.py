"""halfmq.client.fastapi_checks: the check endpoint on the exact path, and the producer (and barriers) in the app's lifespan."""

from __future__ import annotations

import socket

import httpx
import pytest
from fastapi import FastAPI

from halfmq.client import AsyncTransactionProducer, LocalTransactionState
from halfmq.client.fastapi_checks import mount_check_endpoint, producer_lifespan


class Listener:
    async def execute_local_transaction(self, msg: object, arg: object) -> LocalTransactionState:
        return LocalTransactionState.COMMIT_MESSAGE

    async def check_local_transaction(self, msg: object) -> LocalTransactionState:
        return LocalTransactionState.COMMIT_MESSAGE


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def producer(check_url: str = "http://127.0.0.1:8000/halfmq/check") -> AsyncTransactionProducer:
    return AsyncTransactionProducer(closed_port_url(), "g", Listener(), check_url=check_url, heartbeat_interval=60, retries=0)


async def test_the_check_endpoint_is_served_signed_on_the_exact_path_for_post_only() -> None:
    app = FastAPI()
    mount_check_endpoint(app, producer(), check_secret="s3cret")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://svc") as client:
        unsigned = await client.post("/halfmq/check", json={})
        assert unsigned.status_code == 401, "without the broker's signature nothing is answered"
        assert unsigned.headers["content-type"] == "application/problem+json"
        assert (await client.get("/halfmq/check")).status_code == 405
        assert (await client.post("/halfmq/check/", json={})).status_code in (404, 307), "the slash path is not the endpoint"


def test_a_check_url_that_does_not_end_in_the_path_is_refused() -> None:
    with pytest.raises(ValueError, match="does not end in '/halfmq/check'"):
        mount_check_endpoint(FastAPI(), producer("http://127.0.0.1:8000/checks"))


async def test_the_lifespan_starts_the_producer_and_barriers_and_closes_them_in_reverse() -> None:
    events: list[str] = []

    class Barrier:
        def __init__(self, name: str) -> None:
            self.name = name

        async def start(self) -> None:
            events.append(f"start {self.name}")

        async def close(self) -> None:
            events.append(f"close {self.name}")

    sender = producer()
    lifespan = producer_lifespan(sender, Barrier("a"), Barrier("b"))
    async with lifespan(FastAPI()):  # the broker is down: logged, and the app serves on
        assert sender._started
        events.append("serving")
    assert events == ["start a", "start b", "serving", "close b", "close a"]
    assert sender._closed
