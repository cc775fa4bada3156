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
