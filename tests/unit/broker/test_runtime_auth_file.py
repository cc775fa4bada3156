"""A runtime follows its auth file whichever role it has: a set's follower answers reads, so a revoked token must stop there too."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from halfmq.broker.config import BrokerSettings
from halfmq.broker.runtime import BrokerRuntime
from halfmq.errors import Unauthenticated
from tests.support.auth import bearer, write_auth_file


async def test_a_runtime_that_was_not_started_as_the_writer_still_drops_a_revoked_token(tmp_path: Path) -> None:
    auth_path = tmp_path / "auth.json"
    auth, tokens = write_auth_file(auth_path)
    settings = BrokerSettings(data_dir=tmp_path / "data", grpc_port=0, auth_file=auth_path, cluster="etcd://127.0.0.1:2379/t",
                              node_id="n1", cluster_members=["n1=http://127.0.0.1:8080"])
    rt = BrokerRuntime.open(settings)  # as a set's follower has it: opened, never started
    try:
        rt.watch_auth()
        await asyncio.sleep(0)  # the watch has read the file's mtime
        scope = {"path": "/v1/topics", "headers": [(b"authorization", bearer(tokens["credit"])["authorization"].encode())]}
        assert rt.access.principal(scope).name == "credit"
        entry = auth.principal("credit")
        assert entry is not None
        entry.tokens.clear()  # revoked, as `halfmq admin tokens revoke` leaves the file
        seen = auth_path.stat().st_mtime_ns
        auth.save(auth_path)
        os.utime(auth_path, ns=(seen + 10**9, seen + 10**9))  # a changed mtime, even on a coarse clock
        for _ in range(100):
            try:
                rt.access.principal(scope)
            except Unauthenticated:
                break
            await asyncio.sleep(0.1)  # wall-clock: the runtime's watch looks every 2 s on a real sleep (broker/runtime.py takes none yet)
        with pytest.raises(Unauthenticated):
            rt.access.principal(scope)
    finally:
        await rt.stop()
