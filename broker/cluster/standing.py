"""A node's standing in its set: its role, the highest term it knows of, and whom it sees lead.

Shared by the node and its roles (leader_role.py, follower_role.py) and the lease (leader_lease.py). The role
changes only through ``decisions.TRANSITIONS`` (``change``), with ``lock`` held: the tick and the lease
renewals both may change it, so each holds the lock from the moment it reads the role until it has acted on it.
"""

from __future__ import annotations

import asyncio
import json
import logging

from .decisions import Event, Role, next_role

log = logging.getLogger(__name__)


class Standing:
    def __init__(self, node_id: str, url: str) -> None:
        self.node_id = node_id
        self.url = url  # where the others reach this node: what its leader key names
        self.role = Role.FOLLOWER
        self.term = 0  # the highest term this node knows of
        self.leader: dict[str, str] | None = None  # whom this node sees lead (its leader key's value)
        self.lock = asyncio.Lock()

    def change(self, event: Event) -> None:
        """The role ``event`` leads to (decisions.TRANSITIONS); a pair the table does not list keeps the role."""
        role = next_role(self.role, event)
        if role is not self.role:
            log.info("node %s: %s -> %s", self.node_id, self.role.value, role.value)
            self.role = role

    def own_claim(self) -> dict[str, str]:
        """What this node's leader key says: its id and URL (what the others judge: decisions.judge_leader_claim)."""
        return {"node_id": self.node_id, "url": self.url}

    def own_claim_json(self) -> str:
        return json.dumps(self.own_claim())
