"""`halfmq admin init DIR --etcd URL` (compose's replicated overlay runs it): etcd's passwords into DIR, its authentication on."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from halfmq.broker.cluster.etcd import EtcdClient, EtcdCredentials, EtcdRefused
from tests.support.etcd import EtcdProcess
from tests.support.processes import ROOT, halfmq_command


def _init(directory: Path, etcd: EtcdProcess) -> str:
    done = subprocess.run(halfmq_command("admin", "init", str(directory), "--etcd", etcd.url), cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


async def _writes(etcd: EtcdProcess, credentials: EtcdCredentials | None, key: str) -> bool:
    client = EtcdClient(etcd.url, credentials=credentials)
    try:
        await client.put(key, "x")
        return True
    except EtcdRefused:
        return False
    finally:
        await client.aclose()


def test_admin_init_with_etcd_turns_auth_on_once_and_the_halfmq_user_writes_only_the_sets_prefix(tmp_path: Path) -> None:
    etcd = EtcdProcess(tmp_path / "etcd", tmp_path)
    etcd.start(timeout=30)
    try:
        auth = tmp_path / "auth"
        assert "authentication turned on" in _init(auth, etcd)
        halfmq = EtcdCredentials("halfmq", (auth / "etcd-halfmq.password").read_text().strip())
        assert asyncio.run(_writes(etcd, None, "/halfmq/leader")) is False
        assert asyncio.run(_writes(etcd, halfmq, "/halfmq/leader")) is True
        assert asyncio.run(_writes(etcd, halfmq, "/other/leader")) is False
        assert "authentication already on" in _init(auth, etcd)  # compose runs it on every `up`
        (auth / "etcd-root.password").write_text("lost\n")
        with pytest.raises(AssertionError, match="refuses the root password"):
            _init(auth, etcd)
    finally:
        etcd.stop(grace=5)
