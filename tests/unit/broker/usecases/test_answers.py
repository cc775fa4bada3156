"""The JSON the API sends for the protocols' typed results: the bytes (keys in order) the dict-building domain sent before."""

from __future__ import annotations

import msgspec
import orjson

from halfmq.broker.half_messages.half_records import FinalMessage
from halfmq.broker.idempotence.producer_ids import ProducerIdResult, SentHalf, SentMessage
from halfmq.broker.producer_transactions.producer_state_machine import ProducerTxnState
from halfmq.broker.producer_transactions.results import (
    AcksResult,
    AddedMessage,
    BeginResult,
    CommittedMessage,
    EndResult,
    InitResult,
    MessagesResult,
    OpenTxn,
    TxnView,
)
from halfmq.broker.producer_transactions.txn_records import AbortedBy
from halfmq.broker.usecases.answers import (
    acks_answer,
    begin_answer,
    end_answer,
    final_answer,
    half_answer,
    init_answer,
    messages_answer,
    producer_id_answer,
    sent_answer,
    view_answer,
)


def dumps(answer: object) -> str:
    """As the front renders an answer: a wire struct (or a list of them) with msgspec, a dict with orjson."""
    encode = msgspec.json.encode if isinstance(answer, msgspec.Struct | list) else orjson.dumps
    return encode(answer).decode()


def test_a_steps_first_answer_has_no_duplicate_and_its_repeat_says_true() -> None:
    begin = BeginResult("t1", 100, 0, 1, ProducerTxnState.ONGOING, 0)
    assert dumps(begin_answer(begin)) == '{"transactional_id":"t1","producer_id":100,"epoch":0,"transaction":1,"state":"ONGOING","sequence":0}'
    repeat = BeginResult("t1", 100, 0, 1, ProducerTxnState.ONGOING, 0, duplicate=True)
    assert dumps(begin_answer(repeat)).endswith('"sequence":0,"duplicate":true}')
    added = MessagesResult("t1", 1, 2, (AddedMessage("a", "OUT", 0), AddedMessage("b", "OUT", 1)))
    assert dumps(messages_answer(added)) == ('{"transactional_id":"t1","sequence":1,"messages":2,"results":[{"msg_id":"a","topic":"OUT",'
                                           '"queue_id":0},{"msg_id":"b","topic":"OUT","queue_id":1}]}')
    assert dumps(acks_answer(AcksResult("t1", 2, 1, duplicate=True))) == '{"transactional_id":"t1","sequence":2,"acks":1,"duplicate":true}'


def test_an_end_always_says_duplicate_and_who_aborted() -> None:
    commit = EndResult("t1", 100, 0, 1, ProducerTxnState.COMPLETE_COMMIT, 2, 1, None, (CommittedMessage("a", "OUT", 0, 0, 1234),))
    assert dumps(end_answer(commit)) == ('{"transactional_id":"t1","producer_id":100,"epoch":0,"transaction":1,"state":"COMPLETE_COMMIT",'
                                       '"messages":2,"acks":1,"aborted_by":null,"results":[{"msg_id":"a","topic":"OUT","queue_id":0,'
                                       '"queue_offset":0,"commit_log_offset":1234}],"duplicate":false}')
    abort = EndResult("t1", 100, 0, 2, ProducerTxnState.COMPLETE_ABORT, 0, 0, AbortedBy.NEW_EPOCH, (), duplicate=True)
    assert dumps(end_answer(abort)).endswith('"aborted_by":"init","results":[],"duplicate":true}')


def test_the_ids_and_views() -> None:
    assert dumps(init_answer(InitResult("t1", 100, 0, 5000))) == '{"transactional_id":"t1","producer_id":100,"epoch":0,"transaction_timeout_ms":5000}'
    assert dumps(producer_id_answer(ProducerIdResult(102, 0))) == '{"producer_id":102,"epoch":0}'
    view = TxnView("t1", 100, 0, ProducerTxnState.ONGOING, 5000, 1, OpenTxn(1, 1.234, 1_800_000_005_000, 2, 1), None)
    assert dumps(view_answer(view)) == ('{"transactional_id":"t1","producer_id":100,"epoch":0,"state":"ONGOING","transaction_timeout_ms":5000,'
                                      '"transaction":1,"open":{"transaction":1,"age_seconds":1.234,"deadline_timestamp":1800000005000,'
                                      '"messages":2,"acks":1},"aborted_by":null}')
    assert final_answer(None) is None
    assert dumps(final_answer(FinalMessage("m", "OUT", 1, 7, 99))) == '{"msg_id":"m","topic":"OUT","queue_id":1,"queue_offset":7,"commit_log_offset":99}'


def test_numbered_sends_answer_with_the_status_first() -> None:
    assert dumps(sent_answer([SentMessage("x", "OUT", 0, 1, 1610)], "SEND_OK")) == (
        '[{"status":"SEND_OK","msg_id":"x","topic":"OUT","queue_id":0,"queue_offset":1,"commit_log_offset":1610}]')
    assert dumps(half_answer(SentHalf("tx1", "h", 1834, 0), "SEND_OK")) == (
        '{"status":"SEND_OK","transaction_id":"tx1","msg_id":"h","commit_log_offset":1834,"queue_offset":0}')
