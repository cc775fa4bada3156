import pytest

from broker.errors import CheckUrlRefused
from broker.transaction.check_url import validate_check_url

ALLOW = ["127.0.0.1", "localhost", "order", ".svc.local"]


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:8001/halfmq/check",
    "https://localhost/check",
    "http://order:8001/check",
    "http://payments.svc.local/check",
])
def test_allowed_urls_pass(url: str) -> None:
    assert validate_check_url(url, ALLOW) == url


@pytest.mark.parametrize("url", [
    "ftp://127.0.0.1/check",
    "file:///etc/passwd",
    "http://169.254.169.254/latest/meta-data",
    "http://evil.example/check",
    "http://user:pw@localhost/check",
    "http://localhost:99999/check",
    "gopher://localhost/",
    "http://127.0.0.1.evil.example/",
    "not a url",
])
def test_disallowed_urls_are_refused(url: str) -> None:
    with pytest.raises(CheckUrlRefused):
        validate_check_url(url, ALLOW)


@pytest.mark.parametrize("url", [
    "http://127.0.0.1/\x00", "http://127.0.0.1/a\tb", "http://127.0.0.1/\r\nX: y", "http://127.0.0.1/\x7f",
    "http://127.0.0.1/\x85", "http://127.0.0.1/\u200b", "http://127.0.0.1/\udc00", "http://127.0.0.1/a b",
])
def test_urls_with_control_invisible_or_unencodable_characters_are_refused(url: str) -> None:
    # urlsplit takes them, but the check client cannot dial them: a producer registered so would never be reached.
    with pytest.raises(CheckUrlRefused):
        validate_check_url(url, ALLOW)


def test_a_url_with_printable_non_ascii_text_passes() -> None:
    assert validate_check_url("http://127.0.0.1/prüfung", ALLOW) == "http://127.0.0.1/prüfung"
