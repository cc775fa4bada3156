"""What transactions write into the log is read back by the next broker: the names must never drift."""

from halfmq.broker.half_messages import record_names as names
from halfmq.broker.half_messages.record_names import OpKind


def test_op_kinds_are_spelled_as_on_disk() -> None:
    assert [kind.value for kind in OpKind] == ["check", "commit", "rollback", "discard", "resend"]


def test_property_names_are_rocketmqs() -> None:
    assert (names.REAL_TOPIC, names.REAL_QID, names.TRAN_MSG, names.PRODUCER_GROUP, names.TRANSACTION_ID) == (
        "REAL_TOPIC", "REAL_QID", "TRAN_MSG", "PGROUP", "TRANSACTION_ID")
    assert (names.CHECK_TIMES, names.CHECK_IMMUNITY, names.UNIQ_KEY, names.TAGS) == (
        "TRANSACTION_CHECK_TIMES", "CHECK_IMMUNITY_TIME_IN_SECONDS", "UNIQ_KEY", "TAGS")


def test_halfmqs_own_op_record_names_stay_as_written() -> None:
    assert (names.OP, names.HALF_CLOG, names.BORN_MS, names.FINAL_SIZE, names.LAST_ANSWER, names.RESENT) == (
        "OP", "HALF_CLOG", "BORN_MS", "FINAL_SIZE", "LAST_ANSWER", "RESENT")
