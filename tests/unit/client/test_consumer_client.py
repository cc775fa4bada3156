"""ConsumerClient and AsyncConsumerClient are the old names of the simple consumers: they work, and say which name to write."""

from __future__ import annotations

import pytest

from halfmq.client.consumer_client import AsyncConsumerClient, ConsumerClient
from halfmq.client.simple_consumer import AsyncSimpleConsumer, SimpleConsumer

CLOSED = "http://127.0.0.1:9"  # nothing is ever sent in these tests


def test_consumer_client_warns_that_it_is_now_simple_consumer_and_is_one() -> None:
    with pytest.warns(DeprecationWarning, match=r"ConsumerClient is deprecated: use halfmq\.SimpleConsumer"):
        client = ConsumerClient(CLOSED, "g", "T", retries=0)
    assert isinstance(client, SimpleConsumer) and (client.group, client.topic) == ("g", "T")
    client.close()


async def test_async_consumer_client_warns_that_it_is_now_async_simple_consumer_and_is_one() -> None:
    with pytest.warns(DeprecationWarning, match=r"AsyncConsumerClient is deprecated: use halfmq\.AsyncSimpleConsumer"):
        client = AsyncConsumerClient(CLOSED, "g", "T")
    assert isinstance(client, AsyncSimpleConsumer)
    await client.close()


def test_the_warning_points_at_the_line_that_used_the_old_name() -> None:
    with pytest.warns(DeprecationWarning) as caught:
        ConsumerClient(CLOSED, "g", "T").close()
    assert caught[0].filename == __file__
