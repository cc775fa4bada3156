"""GET /v1/cluster as a real set answered it (tests/integration/broker/cluster/test_views_of_a_set.py prints one), for the views' unit tests.

One follower is made to lag, so a table that drops the lag or the in-sync flag shows it.
"""

from __future__ import annotations

import copy
from typing import Any

LEADER_ANSWER: dict[str, Any] = {
    "node_id": "n2", "role": "leader", "term": 3, "writable": True, "leader": {"node_id": "n2", "url": "http://127.0.0.1:36731"},
    "in_sync": ["n1", "n2"], "ack": "quorum", "cluster_size": 3, "etcd_error": None, "log_end": 4096, "durable_offset": 4096,
    "high_watermark": 4096,
    "nodes": [
        {"node_id": "n1", "url": "http://127.0.0.1:55729", "role": "follower", "durable_offset": 4096, "lag": 0, "in_sync": True},
        {"node_id": "n2", "url": "http://127.0.0.1:36731", "role": "leader", "durable_offset": 4096, "log_end": 4096, "lag": 0,
         "in_sync": True},
        {"node_id": "n3", "url": "http://127.0.0.1:33409", "role": "follower", "durable_offset": 1024, "lag": 3072, "in_sync": False},
    ],
    "last_failover": {"term": 3, "leader": "n2", "previous": "n1", "timestamp": 1795668790625},
}

OLD_LEADER_ANSWER: dict[str, Any] = {k: v for k, v in LEADER_ANSWER.items() if k != "last_failover"}  # a broker before the field


def with_node_named(name: str) -> dict[str, Any]:
    """The answer with n3 registered under ``name`` (a crafted one: the views must show it as text)."""
    answer = copy.deepcopy(LEADER_ANSWER)
    answer["nodes"][2]["node_id"] = name
    answer["last_failover"]["previous"] = name
    return answer
