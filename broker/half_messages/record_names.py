"""The names transactions write into the log: property names and op kinds.

They are on disk, so a restart (or a RocketMQ tool reading the same layout) reads
back exactly what an older broker wrote: rename nothing here. The property names
are RocketMQ's where it has one.
"""

from __future__ import annotations

from enum import Enum

from halfmq.broker.store.topics import REAL_QID, REAL_TOPIC

# On a half message (REAL_TOPIC, REAL_QID: the store's spelling, shared with timers)
TRAN_MSG = "TRAN_MSG"
PRODUCER_GROUP = "PGROUP"
TRANSACTION_ID = "TRANSACTION_ID"
CHECK_IMMUNITY = "CHECK_IMMUNITY_TIME_IN_SECONDS"
HALF_PART = "HALF_PART"  # "i/n" on each half of a multi-message transaction (halfmq's ``also``); absent on a lone half
# RocketMQ 4's delay levels, ignored on a half; TIMER_DELIVER_MS / TIMER_DELAY_MS (the send's fields) are kept: its commit routes them
DELAY_PROPERTIES = ("DELAY", "__STARTDELIVERTIME", "TIMER_DELAY_SEC")

# On an op record (besides TRANSACTION_ID and PGROUP)
OP = "OP"
HALF_CLOG = "HALF_CLOG"
BORN_MS = "BORN_MS"
FINAL_SIZE = "FINAL_SIZE"  # bytes from the first final to its op: the finals of a commit lie just before it
CHECK_TIMES = "TRANSACTION_CHECK_TIMES"
LAST_ANSWER = "LAST_ANSWER"

# On a CHECK_MAX_TIME_TOPIC marker of a resent transaction
RESENT = "RESENT"

# Of every message
UNIQ_KEY = "UNIQ_KEY"
TAGS = "TAGS"

HIDDEN_ON_FINAL = (REAL_TOPIC, REAL_QID, CHECK_TIMES, HALF_PART)  # the committed message is the producer's, not the half


class OpKind(str, Enum):
    """What an op record says happened: a check, or the event that decided the transaction."""

    CHECK = "check"
    COMMIT = "commit"
    ROLLBACK = "rollback"
    DISCARD = "discard"
    RESEND = "resend"
