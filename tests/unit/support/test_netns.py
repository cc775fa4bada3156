"""The checker's network (tests/support/netns.py) refuses to add a rule in the namespace it was started from."""

from __future__ import annotations

import pytest

from tests.support.netns import OUTER_NETNS, Partitions, own_netns


def test_partitions_refuse_the_namespace_the_run_was_started_from(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(OUTER_NETNS, own_netns())
    with pytest.raises(AssertionError, match="network namespace of the run's own"):
        Partitions({"n1": "127.0.0.11"})


def test_partitions_refuse_to_start_without_knowing_the_outer_namespace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(OUTER_NETNS, raising=False)
    with pytest.raises(AssertionError, match="network namespace of the run's own"):
        Partitions({"n1": "127.0.0.11"})
