"""What every front calls: the HTTP routes, the RocketMQ 5 gRPC front, the console (and the Kafka front).

A front authenticates (a bearer token, a RocketMQ signature, the console's
cookie), parses its request, calls one use case and maps its errors; it holds
no domain logic. A use case is an object the composition root (broker/runtime/)
builds with the narrow collaborators it names (``ports``: a ``Protocol`` each), so
it reads as the operation it is and is unit-tested with fakes. It authorizes the
principal itself, or takes a grant only ``security.access.Access`` makes
(``Publisher``, ``Subscriber``, ``ClusterAdmin``…), and gives back the API's
answer shapes (``halfmq.wire``). Nothing here imports a web or RPC framework, a
front, or the runtime (import contracts in pyproject.toml).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from halfmq.broker.config import BrokerSettings
from halfmq.broker.security.access import Access

from .console_views import ConsoleViews
from .ending import Ending
from .groups import ManageGroups
from .half_sending import HalfSending
from .journeys import Journeys
from .operator_actions import OperatorActions
from .producer_txns import ProducerTransactions
from .producers import Heartbeats
from .receiving import Receiving
from .sending import Sending
from .settling import Settling
from .topics import ManageTopics
from .views import Views

__all__ = ["Served", "ConsoleViews", "Ending", "HalfSending", "Heartbeats", "Journeys", "ManageGroups", "ManageTopics", "OperatorActions",
           "ProducerTransactions", "Receiving", "Sending", "Settling", "UseCases", "Views"]


@dataclass(frozen=True)
class UseCases:
    """Every use case of one broker (a set's node builds a new one when its role changes); the fronts' one door."""

    sending: Sending
    half_sending: HalfSending
    ending: Ending
    receiving: Receiving
    settling: Settling
    topics: ManageTopics
    groups: ManageGroups
    heartbeats: Heartbeats
    operator_actions: OperatorActions
    producer_transactions: ProducerTransactions
    journeys: Journeys
    views: Views
    console_views: ConsoleViews


class Scraped(Protocol):
    """The scrape's text, read a slice at a time (observability.operator_metrics.OperatorMetrics)."""

    async def text(self, set_reading: Any = None) -> bytes: ...  # a broker set node's SetReading, None on a single broker


class Served(Protocol):
    """What a front reads of the broker it serves (the app's ``state.runtime``, which a set's node swaps when its role
    changes): who is asking (``access``), what to call (``usecases``), and the settings its protocol reports."""

    @property
    def access(self) -> Access: ...
    @property
    def usecases(self) -> UseCases: ...
    @property
    def settings(self) -> BrokerSettings: ...
    @property
    def operator_metrics(self) -> Scraped: ...
