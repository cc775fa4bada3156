"""What a broker set answers when it cannot take or acknowledge a write (all retriable)."""

from __future__ import annotations

from halfmq.broker.store.flush_waiter import FlushTimedOut
from halfmq.wire import SendStatus


class ReplicaAckFailed(FlushTimedOut):
    """Stored and fsynced on the leader, but not acknowledged by enough replicas: the send answers ``send_status``."""

    send_status = SendStatus.FLUSH_SLAVE_TIMEOUT.value


class FlushSlaveTimeout(ReplicaAckFailed):
    send_status = SendStatus.FLUSH_SLAVE_TIMEOUT.value


class SlaveNotAvailable(ReplicaAckFailed):
    send_status = SendStatus.SLAVE_NOT_AVAILABLE.value
