from __future__ import annotations

import pytest

from halfmq.broker.security.protected_mode import refusal


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"])
def test_a_loopback_broker_may_run_without_auth(host):
    assert refusal(host, auth_enabled=False, insecure=False) is None


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.1.2.3", "broker"])
def test_any_other_address_needs_auth_or_insecure(host):
    reason = refusal(host, auth_enabled=False, insecure=False)
    assert reason is not None and "\n" not in reason and "--insecure" in reason
    assert refusal(host, auth_enabled=True, insecure=False) is None
    assert refusal(host, auth_enabled=False, insecure=True) is None
