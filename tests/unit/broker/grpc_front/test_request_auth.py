"""RocketMQ 5 request signatures: parsed from the metadata, fresh within 15 minutes, checked against a principal's secret."""

from __future__ import annotations

import hashlib
import hmac
from datetime import UTC, datetime, timedelta

import pytest

from halfmq.broker.grpc_front.request_auth import fresh, signed_parts
from halfmq.broker.security.auth_file import Authenticator, AuthFile, PolicyEntry, PrincipalEntry, derive_rocketmq_secret

NOW = datetime(2026, 11, 25, 12, 0, 0, tzinfo=UTC)


def test_the_authorization_metadata_of_apaches_clients_is_parsed() -> None:
    metadata = {"authorization": "MQv2-HMAC-SHA1 Credential=shop, SignedHeaders=x-mq-date-time, Signature=ABC123",
                "x-mq-date-time": "20261125T120000Z"}
    assert signed_parts(metadata) == ("shop", "20261125T120000Z", "ABC123")
    assert signed_parts({"authorization": "Bearer hmq_x"}) == ("", "", "")
    assert signed_parts({}) == ("", "", "")


@pytest.mark.parametrize(("offset", "ok"), [(timedelta(0), True), (timedelta(minutes=14), True), (timedelta(minutes=-16), False),
                                            (timedelta(hours=30), False)])
def test_a_signed_time_is_fresh_within_fifteen_minutes(offset: timedelta, ok: bool) -> None:
    assert fresh((NOW + offset).strftime("%Y%m%dT%H%M%SZ"), NOW) is ok  # 30 h: off in every time zone's reading too


def test_garbage_time_is_not_fresh() -> None:
    assert not fresh("yesterday", NOW)


def test_only_the_principals_derived_secret_signs_for_it() -> None:
    auth = AuthFile(principals=[PrincipalEntry(name="shop", policies=[PolicyEntry(actions=["publish"], resources=["topic:orders"])])])
    authenticator = Authenticator(auth)
    stamp = "20261125T120000Z"
    good = hmac.new(derive_rocketmq_secret(auth.check_secret_key, "shop").encode(), stamp.encode(), hashlib.sha1).hexdigest()
    assert authenticator.rocketmq_principal("shop", stamp, good).name == "shop"
    assert authenticator.rocketmq_principal("shop", stamp, good.upper()).name == "shop"
    assert authenticator.rocketmq_principal("shop", "20261125T120001Z", good) is None
    assert authenticator.rocketmq_principal("other", stamp, good) is None
    assert derive_rocketmq_secret(auth.check_secret_key, "shop") != derive_rocketmq_secret(auth.check_secret_key, "other")
