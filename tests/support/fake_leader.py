"""A set's leader as a follower's Kafka front asks it (kafka_front/leader_calls.py): what ``post_to_leader_as`` is
given, and the answer (or the failure) it returns."""

from __future__ import annotations

from typing import Any

from halfmq.broker.cluster.peers import PeerResponse


class FakeLeader:
    def __init__(self, answer: PeerResponse | Exception) -> None:
        self.answer = answer
        self.calls: list[tuple[str, Any, str | None]] = []

    async def post_as(self, path: str, body: Any, token: str | None) -> PeerResponse:
        self.calls.append((path, body, token))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer
