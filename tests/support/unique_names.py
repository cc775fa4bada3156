"""Names no other test run shares (topics, groups, transactional ids against a broker that outlives one test)."""

from __future__ import annotations

import uuid


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:10]}"
