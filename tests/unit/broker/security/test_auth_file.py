from __future__ import annotations

import stat

from halfmq.broker.security.auth_file import Authenticator, AuthFile, PrincipalEntry, derive_check_secret, token_hash


def test_the_file_keeps_hashes_never_tokens_and_is_owner_only(tmp_path):
    auth = AuthFile(principals=[PrincipalEntry(name="order")])
    token = auth.add_token("order")
    path = tmp_path / "auth.json"
    auth.save(path)
    text = path.read_text()
    assert token not in text and token_hash(token) in text
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_token_resolves_to_its_principal_and_an_unknown_one_to_none(tmp_path):
    auth = AuthFile(principals=[PrincipalEntry(name="order"), PrincipalEntry(name="credit")])
    order, credit = auth.add_token("order"), auth.add_token("credit")
    auth.save(tmp_path / "auth.json")
    authn = Authenticator.from_file(tmp_path / "auth.json")
    assert authn.principal_for(order).name == "order"
    assert authn.principal_for(credit).name == "credit"
    assert authn.principal_for(order + "x") is None


def test_each_producer_group_gets_its_own_check_secret():
    auth = AuthFile()
    authn = Authenticator(auth)
    a, b = authn.check_secret("group_a"), authn.check_secret("group_b")
    assert a != b
    assert a == derive_check_secret(auth.check_secret_key, "group_a").encode()
    assert Authenticator(AuthFile()).check_secret("group_a") != a  # another key, another secret


def test_a_policy_with_an_unknown_action_or_pattern_fails_the_whole_file():
    import pytest

    for policy in ({"actions": ["root"], "resources": ["*"]}, {"actions": ["publish"], "resources": ["ORDER_TOPIC"]}):
        with pytest.raises(ValueError):
            AuthFile.model_validate({"principals": [{"name": "x", "policies": [policy]}]})
