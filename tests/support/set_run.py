"""etcd and a broker set for a run, in the run's own network namespace or not: the one setup (and teardown) the
queue checker's run and the partition run share.

With ``netns`` the processes listen on their own loopback addresses (``netns.NODE_HOSTS``, ``ETCD_HOST``), each in a
cgroup of its own, so ``Partitions`` can cut any pair; the caller runs under ``netns.unshare_command``. Teardown heals
every cut before it stops anything, so a stopped node's goodbye is never the thing a cut swallows.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from .broker_set import BrokerSet
from .etcd import EtcdProcess
from .nemesis import ETCD
from .netns import ETCD_HOST, NODE_HOSTS, Partitions


@dataclass
class SetRun:
    etcd: EtcdProcess
    brokers: BrokerSet
    partitions: Partitions | None


@contextlib.contextmanager
def set_run(root: Path, *, netns: bool, disk_size: int | None = None) -> Iterator[SetRun]:
    """Start etcd (with auth) and build the set (not started: the caller starts it); stop both at the end.

    ``disk_size`` gives each node's data dir a tmpfs of its own (a full disk is then a fault the run can apply); where
    no tmpfs can be mounted the run goes on without, and says so."""
    partitions = Partitions({ETCD: ETCD_HOST, **{f"n{i}": h for i, h in enumerate(NODE_HOSTS, 1)}}) if netns else None
    etcd = EtcdProcess(root / "etcd", root, auth=True, **({"host": ETCD_HOST} if netns else {}))
    if partitions is not None:
        etcd.argv = partitions.wrap(ETCD, etcd.argv)
    etcd.start(timeout=30)
    hosts = NODE_HOSTS if netns else None
    wrap = partitions.wrap if partitions else None
    try:
        try:
            brokers = BrokerSet(etcd, root, hosts=hosts, wrap=wrap, disk_size=disk_size)
        except pytest.skip.Exception as cannot:  # no tmpfs here
            print(f"no full disks in this run: {cannot}", flush=True)
            brokers = BrokerSet(etcd, root, hosts=hosts, wrap=wrap)
    except BaseException:
        etcd.stop(grace=5)
        if partitions is not None:
            partitions.remove()
        raise
    try:
        yield SetRun(etcd, brokers, partitions)
    finally:
        if partitions is not None:
            partitions.heal_all()
        brokers.stop()
        etcd.stop(grace=5)
        if partitions is not None:
            partitions.remove()
