"""What a broker set answers when it cannot take or acknowledge a write (all retriable)."""

from __future__ import annotations

from halfmq.broker.store.flush_waiter import FlushTimedOut
from halfmq.errors import NotLeader as BaseNotLeader
from halfmq.wire import SendStatus


class NotLeader(BaseNotLeader):
    """Raised by the node with the leader's URL (None while no leader is known)."""

    def __init__(self, detail: str = "", leader_url: str | None = None) -> None:
        super().__init__(detail, leader_url=leader_url)


class ReplicaAckFailed(FlushTimedOut):
    """Stored and fsynced on the leader, but not acknowledged by enough replicas: the send answers ``send_status``."""

    send_status = SendStatus.FLUSH_SLAVE_TIMEOUT.value


class FlushSlaveTimeout(ReplicaAckFailed):
    send_status = SendStatus.FLUSH_SLAVE_TIMEOUT.value


class SlaveNotAvailable(ReplicaAckFailed):
    send_status = SendStatus.SLAVE_NOT_AVAILABLE.value
