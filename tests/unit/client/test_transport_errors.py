"""How a network library's exception and a non-2xx answer become one line a person can act on."""

from __future__ import annotations

import socket
import ssl

import msgspec
import pytest

from halfmq.client.transport import error_from_answer, failure_reason
from halfmq.errors import BrokerError, TopicNotFound, Unauthenticated


def _chained(outer: Exception, inner: BaseException) -> Exception:
    outer.__cause__ = inner
    return outer


@pytest.mark.parametrize(("exc", "words"), [
    (_chained(OSError("Failed to establish a new connection"), ConnectionRefusedError(111, "Connection refused")),
     "connection refused"),
    (_chained(OSError("connect"), socket.gaierror(-2, "Name or service not known")), "host name not found"),
    (OSError("Connection aborted.", ConnectionResetError(104, "reset by peer")), "connection reset"),
    (TimeoutError(), "no answer within 2.5s"),
])
def test_a_network_failure_is_named_in_a_few_words(exc: BaseException, words: str) -> None:
    assert failure_reason(exc, timeout=2.5) == words


def test_an_unknown_failure_keeps_its_type_and_text() -> None:
    assert failure_reason(RuntimeError("odd")) == "RuntimeError: odd"


def test_a_proxys_html_error_page_becomes_one_line_with_the_status() -> None:
    error = error_from_answer(502, b"<html>\n<body>\n<h1>Bad Gateway</h1>\n</body>\n</html>\n", "POST http://b/v1/x")
    assert str(error) == "HTTP 502 from POST http://b/v1/x: <html> <body> <h1>Bad Gateway</h1> </body> </html>"
    assert error.retriable is True
    assert type(error) is BrokerError


def test_a_problem_answer_becomes_its_error_class() -> None:
    error = error_from_answer(404, msgspec.json.encode(TopicNotFound("no topic t").to_problem()), "GET http://b/v1/topics/t")
    assert isinstance(error, TopicNotFound) and error.detail == "no topic t" and error.status == 404


def test_an_untrusted_certificate_says_why_and_how_to_trust_it() -> None:
    refused = ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")
    refused.verify_message = "self-signed certificate in certificate chain"
    assert failure_reason(_chained(OSError("handshake"), refused)) == (
        "certificate not trusted: self-signed certificate in certificate chain; "
        "pass verify= the CA file, or set $HALFMQ_CA_FILE")


def test_an_unauthenticated_answer_says_how_the_sdk_passes_a_token() -> None:
    body = msgspec.json.encode({"code": "UNAUTHENTICATED", "detail": "send 'Authorization: Bearer <token>'"})
    error = error_from_answer(401, body, "http://b")
    assert isinstance(error, Unauthenticated)
    assert "token=" in str(error) and "$HALFMQ_TOKEN" in str(error)
