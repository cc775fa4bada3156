"""A listener written against TransactionListener / AsyncTransactionListener passes `mypy --strict`, as a user's program would.

The two methods get different messages (the OutgoingMessage as sent, the stored Message checked back);
the protocols say so, and mypy holds a user's listener to it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.package_layout import ROOT

LISTENERS = '''
from typing import Any

from sqlalchemy import create_engine

from halfmq import (AsyncTransactionListener, AsyncTransactionProducer, LocalTransactionState, Message, OutgoingMessage,
                    TransactionListener, TransactionProducer)
from halfmq.client.sqlalchemy.barrier import TransactionBarrier


class Orders:
    def execute_local_transaction(self, message: OutgoingMessage, order_id: str) -> LocalTransactionState:
        print(message.properties["TRANSACTION_ID"], order_id)
        return LocalTransactionState.COMMIT_MESSAGE

    def check_local_transaction(self, message: Message) -> LocalTransactionState:
        print(message.msg_id, message.born_timestamp)
        return LocalTransactionState.UNKNOW


class AsyncOrders:
    async def execute_local_transaction(self, message: OutgoingMessage, arg: Any) -> LocalTransactionState | None:
        return None

    async def check_local_transaction(self, message: Message) -> LocalTransactionState:
        return LocalTransactionState.ROLLBACK_MESSAGE


typed: TransactionListener = Orders()
async_typed: AsyncTransactionListener = AsyncOrders()
producer = TransactionProducer("http://127.0.0.1:10911", "orders", Orders(), check_backs=False)
state: LocalTransactionState = producer.send_in_transaction("ORDERS", {"order_id": "o-1"}, arg="o-1").local_state
AsyncTransactionProducer("http://127.0.0.1:10911", "orders", AsyncOrders(), check_backs=False)
AsyncTransactionProducer("http://127.0.0.1:10911", "orders", Orders(), check_backs=False)
AsyncTransactionProducer("http://127.0.0.1:10911", "shop", TransactionBarrier(create_engine("sqlite://")), check_backs=False)
'''

BOTH_AS_MESSAGE = '''
from typing import Any

from halfmq import LocalTransactionState, Message, TransactionProducer


class Orders:
    def execute_local_transaction(self, message: Message, arg: Any) -> LocalTransactionState:
        return LocalTransactionState.COMMIT_MESSAGE

    def check_local_transaction(self, message: Message) -> LocalTransactionState:
        return LocalTransactionState.UNKNOW


TransactionProducer("http://127.0.0.1:10911", "orders", Orders(), check_backs=False)
'''


def _mypy_strict(tmp_path: Path, program: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "program.py").write_text(program)
    (tmp_path / "mypy.ini").write_text("[mypy]\n")  # the user's own settings, not the repository's
    # the cache kept between runs (.mypy_cache, ignored by git): a warm run reads halfmq and its libraries from it
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--config-file", "mypy.ini", "--cache-dir", str(ROOT / ".mypy_cache" / "listeners"),
         "program.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600, env={**os.environ, "MYPYPATH": str(ROOT)},
    )


@pytest.mark.typecheck
def test_listeners_typed_as_the_protocols_say_pass_mypy_strict(tmp_path: Path) -> None:
    result = _mypy_strict(tmp_path, LISTENERS)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.typecheck
def test_a_listener_that_takes_the_checked_message_in_the_local_transaction_fails_mypy_strict(tmp_path: Path) -> None:
    result = _mypy_strict(tmp_path, BOTH_AS_MESSAGE)
    assert result.returncode == 1 and 'incompatible type "Orders"' in result.stdout, result.stdout + result.stderr
    assert "execute_local_transaction(self, OutgoingMessage, Any, /)" in result.stdout, "mypy names the message it gets"
