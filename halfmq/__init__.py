"""halfmq: RocketMQ-style transactional messages over HTTP.

The SDK's public face: ``from halfmq import Producer, TransactionProducer, Consumer, …``
(``Producer(url, transactional_id=…)`` for Kafka-style transactions, RocketMQ's half
messages with ``TransactionProducer``).
Names resolve on first use (PEP 562), so ``import halfmq`` costs nothing and
``from halfmq import AsyncProducer`` loads the client SDK only, never server code.
The broker, services, job and CLI are ``halfmq.broker``, ``halfmq.services``,
``halfmq.jobs`` and ``halfmq.cli`` (installed with the extras of the same names).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.2.0.dev0"  # the one version source: pyproject.toml reads it, `halfmq --version` prints it
"""The installed version (PEP 440); the one version source: pyproject.toml reads it, ``halfmq --version`` prints it."""

if TYPE_CHECKING:
    from halfmq.client import *  # noqa: F403  (every name of halfmq.client's, typed; the list lives there)


def __getattr__(name: str) -> Any:
    # halfmq.client's names, and ``__all__`` (them and ``__version__``), on first use: ``import halfmq`` loads nothing
    client = import_module("halfmq.client")
    if name == "__all__":
        value: Any = [*client.__all__, "__version__"]
    elif name in client.__all__:
        value = getattr(client, name)
    else:
        raise AttributeError(f"module 'halfmq' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__getattr__("__all__"))
