from halfmq.broker.half_messages.check_client import CheckClient, CheckOutcome, interpret


def test_only_a_200_with_a_known_state_decides() -> None:
    assert interpret(200, b'{"state": "commit"}').outcome is CheckOutcome.COMMIT
    assert interpret(200, b'{"state": "rollback"}').outcome is CheckOutcome.ROLLBACK
    assert interpret(200, b'{"state": "unknown"}').outcome is CheckOutcome.UNKNOWN


def test_garbage_answers_count_as_unknown_or_error_never_as_a_decision() -> None:
    for status, body in [(200, b'{"state": "COMMIT_MESSAGE"}'), (200, b"commit"), (200, b"[]"), (500, b'{"state":"commit"}'), (301, b"")]:
        assert interpret(status, body).outcome not in (CheckOutcome.COMMIT, CheckOutcome.ROLLBACK)


def test_202_means_the_producer_will_end_it_later() -> None:
    assert interpret(202, b"").outcome is CheckOutcome.DEFERRED


async def test_a_url_the_http_client_cannot_build_is_unreachable_not_an_exception() -> None:
    client = CheckClient()
    try:
        for url in ("http://127.0.0.1:9/\x00", "http://127.0.0.1:9/\udc00"):
            assert (await client.check(url, {"transaction_id": "t"})).outcome is CheckOutcome.UNREACHABLE
    finally:
        await client.aclose()


async def test_an_answer_over_64_kib_is_an_error_counted_in_bytes_not_characters() -> None:
    from tests.support.check_server import CheckServer

    server = CheckServer()
    client = CheckClient()
    try:
        emoji = "\N{GRINNING FACE}" * 16_400  # 16,400 characters, 65,600 bytes
        server.answer = lambda request: (200, ('{"state": "commit", "note": "' + emoji + '"}').encode())
        answer = await client.check(server.url, {"transaction_id": "t"})
        assert answer.outcome is CheckOutcome.ERROR and "64 KiB" in answer.detail
        server.answer = lambda request: (200, ('{"state": "commit", "note": "' + emoji[:16_000] + '"}').encode())  # 64,030 bytes
        assert (await client.check(server.url, {"transaction_id": "t"})).outcome is CheckOutcome.COMMIT
    finally:
        await client.aclose()
        server.close()
