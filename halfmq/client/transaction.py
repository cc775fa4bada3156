"""Until ``halfmq/client/__init__.py`` maps these names to their modules: the listener types live in ``listener``.

Delete this module at merge, once the name list points ``LocalTransactionState``,
``TransactionListener`` and ``AsyncTransactionListener`` at ``halfmq.client.listener``
and ``TransactionSendResult`` at ``halfmq.client.transaction_steps``.
"""

from .listener import AsyncTransactionListener, LocalTransactionState, TransactionListener
from .transaction_steps import TransactionSendResult

__all__ = ["AsyncTransactionListener", "LocalTransactionState", "TransactionListener", "TransactionSendResult"]
