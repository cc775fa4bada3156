"""Mistakes in how the SDK is set up fail at once, in one line that says what to write instead."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from halfmq import (
    AsyncConsumer,
    AsyncProducer,
    AsyncTransactionProducer,
    Consumer,
    LocalTransactionState,
    Producer,
    TransactionProducer,
)

CLOSED = "http://127.0.0.1:9"  # nothing is ever sent in these tests


class Listener:
    def execute_local_transaction(self, msg: Any, arg: Any) -> LocalTransactionState:
        return LocalTransactionState.COMMIT_MESSAGE

    def check_local_transaction(self, msg: Any) -> LocalTransactionState:
        return LocalTransactionState.UNKNOWN


def _handler(message: Any) -> None:
    return None


@pytest.mark.parametrize("url", ["localhost:10911", "127.0.0.1:10911", "broker/", "ftp://broker:21", "http://"])
@pytest.mark.parametrize("build", [
    lambda url: Producer(url),
    lambda url: AsyncProducer(url),
    lambda url: TransactionProducer(url, "g", Listener(), check_backs=False),
    lambda url: AsyncTransactionProducer(url, "g", Listener(), check_backs=False),
    lambda url: Consumer(url, "g", "T", _handler),
    lambda url: AsyncConsumer(url, "g", "T", _handler),
], ids=["Producer", "AsyncProducer", "TransactionProducer", "AsyncTransactionProducer", "Consumer", "AsyncConsumer"])
def test_a_broker_url_without_http_or_https_is_refused_at_construction(build: Any, url: str) -> None:
    with pytest.raises(ValueError, match=r"broker URL .* must start with http:// or https://, e\.g\. http://"):
        build(url)


def test_a_check_url_without_a_scheme_is_refused_at_construction() -> None:
    with pytest.raises(ValueError, match="check_url .* must start with http:// or https://"):
        TransactionProducer(CLOSED, "g", Listener(), check_url="127.0.0.1:8001/halfmq/check")


def test_a_transaction_producer_without_check_url_refuses_to_start() -> None:
    producer = TransactionProducer(CLOSED, "g", Listener())
    with pytest.raises(RuntimeError, match="check_url.*check_backs=False"):
        producer.start()
    producer.close()


def test_an_async_transaction_producer_without_check_url_refuses_to_start() -> None:
    async def start() -> None:
        producer = AsyncTransactionProducer(CLOSED, "g", Listener())
        try:
            with pytest.raises(RuntimeError, match="check_url.*check_backs=False"):
                await producer.start()
        finally:
            await producer.close()

    asyncio.run(start())


def test_check_backs_off_and_a_check_url_together_are_refused() -> None:
    with pytest.raises(ValueError, match="check_backs=False"):
        TransactionProducer(CLOSED, "g", Listener(), check_url="http://127.0.0.1:8001/check", check_backs=False)


def test_unknown_is_an_alias_of_rocketmqs_unknow() -> None:
    assert LocalTransactionState.UNKNOWN is LocalTransactionState.UNKNOW
    assert LocalTransactionState["UNKNOWN"] is LocalTransactionState.UNKNOW
