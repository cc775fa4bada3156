"""The broker-wide bound on consumer groups: a group's progress is held in memory for as long as the broker runs, so
the names that may begin one are bounded (HALFMQ_BROKER_MAX_CONSUMER_GROUPS).

Asked by every live way a group begins: a receive, an offset reset or commit (HTTP, the console, Kafka's
OffsetCommit), a producer transaction's consumed offsets (Kafka's TxnOffsetCommit); never by a replay, which restores
what was admitted before.
"""

from __future__ import annotations

from halfmq.broker.store.topics import is_system_group
from halfmq.errors import TooManyConsumerGroups

from .queue_progress import GroupStates


class GroupAdmission:
    def __init__(self, states: GroupStates, max_groups: int) -> None:
        self._states = states
        self._max_groups = max_groups

    def admit(self, group: str) -> None:
        """TooManyConsumerGroups when ``group`` would be one more group than the bound; a group already held, or deleted
        since, and the broker's own groups are not counted (counted only at the bound: a held group costs nothing)."""
        held = self._states.by_group
        if group in held or len(held) < self._max_groups or is_system_group(group):
            return
        users = sum(1 for g in held if not is_system_group(g))
        if users >= self._max_groups:
            raise TooManyConsumerGroups(f"the broker holds {users} consumer groups (HALFMQ_BROKER_MAX_CONSUMER_GROUPS); "
                                        "delete groups nobody runs (halfmq admin groups delete) or raise the bound")
