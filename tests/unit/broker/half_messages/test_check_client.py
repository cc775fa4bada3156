import asyncio
from collections.abc import AsyncIterator, Iterator

import pytest

from halfmq.broker.half_messages.check_client import MAX_RESPONSE_BYTES, CheckClient, CheckOutcome, interpret
from tests.support.check_server import CheckServer
from tests.support.processes import free_port


def test_only_a_200_with_a_known_state_decides() -> None:
    assert interpret(200, b'{"state": "commit"}').outcome is CheckOutcome.COMMIT
    assert interpret(200, b'{"state": "rollback"}').outcome is CheckOutcome.ROLLBACK
    assert interpret(200, b'{"state": "unknown"}').outcome is CheckOutcome.UNKNOWN


def test_garbage_answers_count_as_unknown_or_error_never_as_a_decision() -> None:
    for status, body in [(200, b'{"state": "COMMIT_MESSAGE"}'), (200, b"commit"), (200, b"[]"), (500, b'{"state":"commit"}'), (301, b"")]:
        assert interpret(status, body).outcome not in (CheckOutcome.COMMIT, CheckOutcome.ROLLBACK)


def test_202_means_the_producer_will_end_it_later() -> None:
    assert interpret(202, b"").outcome is CheckOutcome.DEFERRED


@pytest.fixture
def server() -> Iterator[CheckServer]:
    server = CheckServer()
    yield server
    server.close()


@pytest.fixture
async def client() -> AsyncIterator[CheckClient]:
    client = CheckClient(connect_timeout=1.0, read_timeout=0.5)
    yield client
    await client.aclose()


async def test_a_url_the_http_client_cannot_build_is_unreachable_not_an_exception(client: CheckClient, server: CheckServer) -> None:
    port = server.url.split(":")[2].split("/")[0]
    for url in (f"http://[::1:{port}/x", "http://127.0.0.1:99999/x", f"ftp://127.0.0.1:{port}/x", "http:///x", "http://a\udc00b/x"):
        answer = await client.check(url, {"transaction_id": "t"})
        assert answer.outcome is CheckOutcome.UNREACHABLE and answer.detail.startswith("invalid URL"), (url, answer)
    assert server.calls == []


async def test_a_producer_that_answers_commit_commits_and_a_closed_client_checks_again_on_a_new_session(
        client: CheckClient, server: CheckServer) -> None:
    server.answer_state("commit")
    assert (await client.check(server.url, {"transaction_id": "t"})).outcome is CheckOutcome.COMMIT
    await client.aclose()
    assert (await client.check(server.url, {"transaction_id": "u"})).outcome is CheckOutcome.COMMIT
    assert [c["transaction_id"] for c in server.calls] == ["t", "u"]


async def test_a_refused_connect_is_unreachable_and_does_not_count(client: CheckClient) -> None:
    answer = await client.check(f"http://127.0.0.1:{free_port()}/halfmq/check", {"transaction_id": "t"})
    assert answer.outcome is CheckOutcome.UNREACHABLE and not answer.reached and "cannot connect" in answer.detail


async def test_a_producer_that_takes_the_call_but_never_answers_is_a_timeout(client: CheckClient, server: CheckServer) -> None:
    server.answer = lambda request: (0, b"")  # holds the answer until the server closes
    answer = await client.check(server.url, {"transaction_id": "t"})
    assert answer.outcome is CheckOutcome.TIMEOUT and answer.reached


async def test_a_redirect_is_an_error_and_is_not_followed(client: CheckClient, server: CheckServer) -> None:
    elsewhere = CheckServer()
    try:
        elsewhere.answer_state("commit")
        server.answer = lambda request: (307, b"")
        server.headers = {"location": elsewhere.url}
        answer = await client.check(server.url, {"transaction_id": "t"})
        assert answer.outcome is CheckOutcome.ERROR and answer.detail == "HTTP 307"
        assert elsewhere.calls == []
    finally:
        elsewhere.close()


async def test_a_5xx_is_an_error_whatever_its_body_says(client: CheckClient, server: CheckServer) -> None:
    server.answer = lambda request: (503, b'{"state": "commit"}')
    answer = await client.check(server.url, {"transaction_id": "t"})
    assert answer.outcome is CheckOutcome.ERROR and answer.detail == "HTTP 503"


async def test_an_answer_over_64_kib_is_an_error_counted_in_bytes_not_characters(client: CheckClient, server: CheckServer) -> None:
    emoji = "\N{GRINNING FACE}" * 16_400  # 16,400 characters, 65,600 bytes
    server.answer = lambda request: (200, ('{"state": "commit", "note": "' + emoji + '"}').encode())
    answer = await client.check(server.url, {"transaction_id": "t"})
    assert answer.outcome is CheckOutcome.ERROR and "64 KiB" in answer.detail
    server.answer = lambda request: (200, ('{"state": "commit", "note": "' + emoji[:16_000] + '"}').encode())  # 64,030 bytes
    assert (await client.check(server.url, {"transaction_id": "t"})).outcome is CheckOutcome.COMMIT


async def test_an_answer_that_never_says_its_length_is_cut_at_64_kib(client: CheckClient) -> None:
    async def answer_without_a_length(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n")
        writer.write(b'{"state": "commit", "note": "' + b"x" * (16 * MAX_RESPONSE_BYTES) + b'"}')  # a whole commit, 1 MiB long
        try:
            await writer.drain()
        except ConnectionError:
            pass  # the client stopped reading and closed: what it should do
        finally:
            writer.close()

    listener = await asyncio.start_server(answer_without_a_length, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    try:
        answer = await client.check(f"http://127.0.0.1:{port}/halfmq/check", {"transaction_id": "t"})
        assert answer.outcome is CheckOutcome.ERROR and "64 KiB" in answer.detail
    finally:
        listener.close()
        await listener.wait_closed()
