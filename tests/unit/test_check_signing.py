from __future__ import annotations

import pytest

from halfmq.check_signing import SIGNATURE_HEADER, TIMESTAMP_HEADER, CheckVerifier, signed_headers
from halfmq.errors import CheckSignatureInvalid
from tests.support.fake_clock import FakeClock

SECRET = b"group-secret"
BODY = b'{"transaction_id":"t1","producer_group":"g","check_times":1}'


def headers(body: bytes = BODY, secret: bytes = SECRET, now: float = 1000.0) -> tuple[str, str]:
    h = signed_headers(secret, body, now)
    return h[TIMESTAMP_HEADER], h[SIGNATURE_HEADER]


def test_a_fresh_signed_request_passes():
    CheckVerifier(SECRET, clock=FakeClock(1000.0)).verify(*headers(), BODY)


@pytest.mark.parametrize("ts, sig", [(None, None), ("1000", None), (None, "v1=00"), ("soon", "v1=00")])
def test_an_unsigned_request_is_refused(ts, sig):
    with pytest.raises(CheckSignatureInvalid):
        CheckVerifier(SECRET, clock=FakeClock(1000.0)).verify(ts, sig, BODY)


def test_a_tampered_body_is_refused():
    with pytest.raises(CheckSignatureInvalid, match="does not match"):
        CheckVerifier(SECRET, clock=FakeClock(1000.0)).verify(*headers(), BODY.replace(b"t1", b"t2"))


def test_another_groups_secret_is_refused():
    with pytest.raises(CheckSignatureInvalid):
        CheckVerifier(SECRET, clock=FakeClock(1000.0)).verify(*headers(secret=b"other"), BODY)


def test_a_moved_timestamp_is_refused():
    ts, sig = headers()
    with pytest.raises(CheckSignatureInvalid):
        CheckVerifier(SECRET, clock=FakeClock(1000.0)).verify(str(int(ts) + 1), sig, BODY)


@pytest.mark.parametrize("now", [1000.0 + 301, 1000.0 - 301])
def test_a_request_outside_the_window_is_stale(now):
    with pytest.raises(CheckSignatureInvalid, match="stale"):
        CheckVerifier(SECRET, window=300, clock=FakeClock(now)).verify(*headers(), BODY)


def test_a_replay_inside_the_window_is_refused():
    verifier = CheckVerifier(SECRET, clock=FakeClock(1000.0))
    verifier.verify(*headers(), BODY)
    with pytest.raises(CheckSignatureInvalid, match="replay"):
        verifier.verify(*headers(), BODY)


@pytest.mark.parametrize("ts, sig", [
    ("1000", "v1=\u00e9" + "0" * 63),  # latin-1 bytes in the header: compare_digest refuses a non-ASCII str
    ("1000", "v1=\u2603"),
    ("\uff11\uff10\uff10\uff10", None),  # full-width digits
    ("9" * 5000, None),  # int() refuses more than 4,300 digits
])
def test_a_signature_or_timestamp_outside_ascii_is_refused_not_an_error(ts, sig):
    if sig is None:
        sig = headers()[1]
    with pytest.raises(CheckSignatureInvalid):
        CheckVerifier(SECRET, clock=FakeClock(1000.0)).verify(ts, sig, BODY)
