"""Turn etcd's authentication on for a broker set: a root user, and one user whose role may read and write the set's prefix.

What ``halfmq up --replicas N`` and ``halfmq admin init --etcd URL`` (compose) run once etcd answers,
and the tests' etcd too. Run again it changes nothing: with auth already on it logs in as root and
makes sure the set's user, role and permission are there (with the password it was given).
Without auth, anyone who can reach etcd could name the set's leader (issue 30).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from halfmq.broker.config import BrokerSettings

from .etcd import AUTH_NOT_ENABLED, EtcdClient, EtcdCredentials, EtcdRefused, prefix_range

log = logging.getLogger(__name__)

ROOT = "root"
EXISTS = "already exists"


class EtcdRootRefused(EtcdRefused):
    """etcd has auth on and does not take the root password we hold: it was secured by someone else (or the password file was lost)."""


@dataclass(frozen=True)
class EtcdAuthPlan:
    root_password: str
    user: EtcdCredentials  # the brokers' user; its role is named after it
    prefix: str  # "/halfmq/": the set's keys (ClusterAddress.prefix + "/")

    def steps(self) -> list[tuple[str, dict[str, object]]]:
        """The gateway calls, in order; each one's "already exists" is success."""
        key = self.prefix if self.prefix.endswith("/") else self.prefix + "/"
        name = self.user.user
        return [
            ("/v3/auth/user/add", {"name": ROOT, "password": self.root_password}),
            ("/v3/auth/role/add", {"name": ROOT}),
            ("/v3/auth/user/grant", {"user": ROOT, "role": ROOT}),
            ("/v3/auth/role/add", {"name": name}),
            ("/v3/auth/role/grant", {"name": name, "perm": {"permType": "READWRITE", **prefix_range(key)}}),
            ("/v3/auth/user/add", {"name": name, "password": self.user.password}),
            ("/v3/auth/user/changepw", {"name": name, "password": self.user.password}),
            ("/v3/auth/user/grant", {"user": name, "role": name}),
        ]


async def secure(endpoint: str, plan: EtcdAuthPlan, call_seconds: float = 10.0) -> bool:
    """Make etcd at ``endpoint`` require authentication as ``plan`` says; True if auth was turned on now."""
    root = EtcdClient(endpoint, timeout=call_seconds, credentials=EtcdCredentials(ROOT, plan.root_password))
    try:
        try:
            enabled = await root.authenticate(EtcdCredentials(ROOT, plan.root_password), warn_if_off=False) is not None
        except EtcdRefused as exc:
            raise EtcdRootRefused(f"etcd at {endpoint} has authentication on and refuses the root password halfmq holds "
                                  f"({exc.etcd_message}); restore that password file, or start etcd from an empty data dir",
                                  exc.status, exc.etcd_message) from None
        for path, body in plan.steps():
            try:
                await root.call(path, body)
            except EtcdRefused as exc:
                if EXISTS not in exc.etcd_message:
                    raise
        if enabled:
            return False
        try:
            await root.call("/v3/auth/enable", {})
        except EtcdRefused as exc:  # a second `secure` racing this one turned it on first
            if AUTH_NOT_ENABLED in exc.etcd_message:
                raise
            return False
        return True
    finally:
        await root.aclose()


def broker_credentials(settings: BrokerSettings) -> EtcdCredentials | None:
    """The etcd user a broker set's node logs in as (None, with a warning, when none is configured)."""
    if not settings.etcd_user or settings.etcd_password_file is None:
        log.warning("node %s: no etcd credentials (HALFMQ_BROKER_ETCD_USER / _PASSWORD_FILE): an etcd without authentication "
                    "lets anyone who reaches it stop this set", settings.node_id)
        return None
    return EtcdCredentials(settings.etcd_user, settings.etcd_password_file.read_text().strip())
