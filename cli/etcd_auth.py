"""Securing a broker set's etcd from the CLI: ``halfmq up --replicas N`` and ``halfmq admin init --etcd URL`` (compose).

The passwords come from the credentials directory (credentials.ensure_etcd_passwords);
the users, role and permission are broker/cluster/etcd_auth.py's.
"""

from __future__ import annotations

import asyncio

from halfmq.broker.cluster.etcd import EtcdCredentials
from halfmq.broker.cluster.etcd_auth import EtcdAuthPlan, secure

from .credentials import ETCD_ROOT, ETCD_USER, Credentials

DEFAULT_PREFIX = "/halfmq/"  # etcd://HOST:PORT/halfmq: the prefix `up` and compose give their set


def etcd_auth_plan(creds: Credentials, prefix: str = DEFAULT_PREFIX) -> EtcdAuthPlan:
    return EtcdAuthPlan(creds.etcd_password(ETCD_ROOT), EtcdCredentials(ETCD_USER, creds.etcd_password(ETCD_USER)), prefix)


def secure_etcd(endpoint: str, creds: Credentials, prefix: str = DEFAULT_PREFIX) -> bool:
    """Turn etcd's authentication on (idempotent); True if it was turned on now."""
    return asyncio.run(secure(endpoint, etcd_auth_plan(creds, prefix)))


def node_env(creds: Credentials) -> dict[str, str]:
    """What a node of the set needs to log in to etcd."""
    return {"HALFMQ_BROKER_ETCD_USER": ETCD_USER, "HALFMQ_BROKER_ETCD_PASSWORD_FILE": str(creds.etcd_password_file(ETCD_USER))}
