import pytest

from halfmq.broker.config import BrokerSettings
from halfmq.broker.half_messages.check_url import CheckTarget, OwnAddress, parse_allow_entry, validate_check_url
from halfmq.errors import CheckUrlRefused

ALLOW = ["http://127.0.0.1:*", "https://localhost:8443", "http://order:8001", "http://metadata:80", "http://lan:80", "http://svc:10911"]
DNS = {"127.0.0.1": ["127.0.0.1"], "localhost": ["127.0.0.1", "::1"], "order": ["172.18.0.5"],
       "metadata": ["169.254.169.254"], "lan": ["fe80::1"], "svc": ["10.0.0.7"]}
BROKER = OwnAddress("127.0.0.1", 10911, frozenset())


def resolve(host: str, port: int) -> list[str]:
    return DNS.get(host, [])


def check(url: str, own: OwnAddress = BROKER) -> CheckTarget:
    return validate_check_url(url, ALLOW, own, resolve)


@pytest.mark.parametrize("url, address", [
    ("http://127.0.0.1:8001/halfmq/check", "127.0.0.1"),
    ("https://localhost:8443/check", "127.0.0.1"),
    ("http://order:8001/check", "172.18.0.5"),
])
def test_allowed_urls_pass_with_the_address_they_resolved_to(url: str, address: str) -> None:
    assert check(url) == CheckTarget(url, address)


@pytest.mark.parametrize("url", [
    "ftp://127.0.0.1/check",
    "file:///etc/passwd",
    "http://169.254.169.254/latest/meta-data",
    "http://evil.example/check",
    "http://user:pw@127.0.0.1:8001/check",
    "http://localhost:99999/check",
    "gopher://localhost/",
    "http://127.0.0.1.evil.example/",
    "not a url",
])
def test_disallowed_urls_are_refused(url: str) -> None:
    with pytest.raises(CheckUrlRefused):
        check(url)


@pytest.mark.parametrize("url", [
    "http://order:8002/check",      # the right host on another port
    "https://order:8001/check",     # the right host and port, another scheme
    "http://localhost:8443/check",  # https only for localhost:8443
])
def test_scheme_and_port_must_match_not_only_the_host(url: str) -> None:
    with pytest.raises(CheckUrlRefused, match="not in check_url_allow"):
        check(url)


@pytest.mark.parametrize("url, why", [
    ("http://metadata/latest/meta-data", "link-local"),
    ("http://lan/check", "link-local"),
])
def test_an_allowed_name_that_resolves_to_link_local_or_metadata_is_refused(url: str, why: str) -> None:
    with pytest.raises(CheckUrlRefused, match=why):
        check(url)


def test_a_name_that_does_not_resolve_is_refused() -> None:
    with pytest.raises(CheckUrlRefused, match="does not resolve"):
        validate_check_url("http://order:8001/check", ALLOW, BROKER, lambda host, port: [])


def test_the_brokers_own_address_is_refused_even_when_allowed() -> None:
    with pytest.raises(CheckUrlRefused, match="the broker itself"):
        check("http://127.0.0.1:10911/v1/transactions/x/force-rollback")
    on_all_interfaces = OwnAddress("0.0.0.0", 10911, frozenset())
    with pytest.raises(CheckUrlRefused, match="the broker itself"):
        check("http://svc:10911/v1/transactions/x/force-rollback", on_all_interfaces)


def test_the_broker_dials_the_checked_address_not_the_name_again() -> None:
    url, headers, tls_name = CheckTarget("http://order:8001/halfmq/check", "172.18.0.5").dial()
    assert url == "http://172.18.0.5:8001/halfmq/check"
    assert headers == {"host": "order:8001"}
    assert tls_name is None
    url, headers, tls_name = CheckTarget("https://svc.example/check", "::1").dial()
    assert url == "https://[::1]/check" and headers == {"host": "svc.example"} and tls_name == "svc.example"


@pytest.mark.parametrize("entry", ["order", "127.0.0.1", "ftp://order:21", "http://order:8001/path"])
def test_allow_entries_must_name_scheme_host_and_port(entry: str) -> None:
    with pytest.raises(ValueError):
        parse_allow_entry(entry)
    with pytest.raises(ValueError):
        BrokerSettings(check_url_allow=entry)


def test_the_default_allow_list_parses() -> None:
    assert parse_allow_entry("http://[::1]:*").host == "::1"
    BrokerSettings()


@pytest.mark.parametrize("url", [
    "http://127.0.0.1/\x00", "http://127.0.0.1/a\tb", "http://127.0.0.1/\r\nX: y", "http://127.0.0.1/\x7f",
    "http://127.0.0.1/\x85", "http://127.0.0.1/\u200b", "http://127.0.0.1/\udc00", "http://127.0.0.1/a b",
])
def test_urls_with_control_invisible_or_unencodable_characters_are_refused(url: str) -> None:
    # urlsplit takes them, but the check client cannot dial them: a producer registered so would never be reached.
    with pytest.raises(CheckUrlRefused):
        check(url)


def test_a_url_with_printable_non_ascii_text_passes() -> None:
    assert check("http://127.0.0.1/prüfung")
