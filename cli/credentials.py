"""Credentials for the demo topology: made once in a directory, then picked up by every component.

``halfmq up`` (and ``halfmq admin init`` for compose) writes the broker's auth
file with three principals — admin, the order service, the credit service —
each with one token, plus the order producer group's check-back secret. The
broker gets the auth file; each service gets only its own token file (and
the order service its secret); all owner-only.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path

from halfmq.broker.security.auth_file import AuthFile, PolicyEntry, PrincipalEntry, derive_check_secret, write_private

ORDER_TOPIC = "ORDER_TOPIC"
ORDER_GROUP = "order_producer_group"
CREDIT_GROUP = "credit_group"
PAYMENT_DUE_TOPIC = "ORDER_PAYMENT_DUE"  # the order service's delayed "payment due" messages, which it consumes itself
PAYMENT_DUE_GROUP = "order_payment_due_group"
ETCD_USER = "halfmq"  # the broker set's etcd user; its role may read and write the set's prefix only
ETCD_ROOT = "root"


@dataclass(frozen=True)
class Credentials:
    directory: Path

    @property
    def auth_file(self) -> Path:
        return self.directory / "auth.json"

    def token_file(self, principal: str) -> Path:
        return self.directory / f"{principal}.token"

    @property
    def order_check_secret_file(self) -> Path:
        return self.directory / f"{ORDER_GROUP}.check-secret"

    def token(self, principal: str) -> str:
        return self.token_file(principal).read_text().strip()

    def etcd_password_file(self, user: str = ETCD_USER) -> Path:
        return self.directory / f"etcd-{user}.password"

    def etcd_password(self, user: str = ETCD_USER) -> str:
        return self.etcd_password_file(user).read_text().strip()


def ensure_credentials(directory: Path, topic: str = ORDER_TOPIC, order_group: str = ORDER_GROUP,
                       credit_group: str = CREDIT_GROUP) -> tuple[Credentials, bool]:
    """The credentials in ``directory``, made on first use; also whether they were made now."""
    creds = Credentials(directory)
    if creds.auth_file.exists():
        return creds, False
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)
    auth = AuthFile(principals=[
        PrincipalEntry(name="admin", policies=[PolicyEntry(actions=["admin"], resources=["*"])]),
        PrincipalEntry(name="order", policies=[
            PolicyEntry(actions=["publish"], resources=[f"topic:{topic}", f"group:{order_group}"]),
            PolicyEntry(actions=["publish", "subscribe"], resources=[f"topic:{PAYMENT_DUE_TOPIC}", f"group:{PAYMENT_DUE_GROUP}"]),
        ]),
        PrincipalEntry(name="credit", policies=[PolicyEntry(actions=["subscribe"], resources=[f"topic:{topic}", f"group:{credit_group}"])]),
    ])
    for principal in ("admin", "order", "credit"):
        write_private(creds.token_file(principal), auth.add_token(principal).encode() + b"\n")
    write_private(creds.order_check_secret_file, derive_check_secret(auth.check_secret_key, order_group).encode() + b"\n")
    auth.save(creds.auth_file)  # last: its presence means the set is complete
    return creds, True


def ensure_etcd_passwords(directory: Path) -> tuple[Credentials, bool]:
    """etcd's root and ``halfmq`` passwords in ``directory``, each made on first use; also whether any was made now."""
    creds = Credentials(directory)
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)
    made = False
    for user in (ETCD_ROOT, ETCD_USER):
        if not creds.etcd_password_file(user).exists():
            write_private(creds.etcd_password_file(user), secrets.token_urlsafe(24).encode() + b"\n")
            made = True
    return creds, made
