"""An auth file with a few principals for tests of a broker with auth on."""

from __future__ import annotations

from pathlib import Path

from halfmq.broker.security.auth_file import AuthFile, PolicyEntry, PrincipalEntry

# name -> [(actions, resources)]
PRINCIPALS = {
    "admin": [(["admin"], ["*"])],
    "order": [(["publish"], ["topic:ORDER_TOPIC", "group:order_producer_group", "transactional-id:order-tx"])],
    "credit": [(["subscribe"], ["topic:ORDER_TOPIC", "group:credit_group"])],
    # A stranger with rights of its own: a valid token is not a licence for other groups' topics or transactions.
    "mallory": [(["publish", "subscribe"], ["topic:MALLORY_*", "group:mallory_group"])],
}


def write_auth_file(path: Path) -> tuple[AuthFile, dict[str, str]]:
    """Writes the file and returns it with one fresh token per principal name."""
    auth = AuthFile(principals=[
        PrincipalEntry(name=name, policies=[PolicyEntry(actions=a, resources=r) for a, r in policies])
        for name, policies in PRINCIPALS.items()
    ])
    tokens = {name: auth.add_token(name) for name in PRINCIPALS}
    auth.save(path)
    return auth, tokens


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}
