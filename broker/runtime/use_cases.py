"""The composition root's wiring of the use cases: each given only the collaborators it names (cosmicpython's
bootstrap.py), from the services a ``BrokerRuntime`` opened. The one place the use cases meet the domain."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from halfmq.broker.delivery.dlq_redrive import Redrives
from halfmq.broker.half_messages.check_url import OwnAddress
from halfmq.broker.timers.recall import Recalls
from halfmq.broker.usecases import (
    ConsoleViews,
    Ending,
    HalfSending,
    Heartbeats,
    Journeys,
    ManageGroups,
    ManageTopics,
    OperatorActions,
    ProducerTransactions,
    Receiving,
    Sending,
    Settling,
    UseCases,
    Views,
)

if TYPE_CHECKING:
    from .services import BrokerRuntime


def use_cases(rt: BrokerRuntime) -> UseCases:
    """Every use case, each given only the collaborators it names (cosmicpython's bootstrap): the one place they meet."""
    settings, store, access, durable = rt.settings, rt.store, rt.access, rt.durable
    log_end: Callable[[], int] = lambda: store.commit_log.end_offset  # noqa: E731
    views = Views(rt.half_messages, store, rt.delivery.views, rt.producers, settings.flush_mode)
    redrives = Redrives(settings.dlq_redrive_jobs, settings.dlq_redrive_rate, settings.dlq_redrive_max_rate)
    return UseCases(
        sending=Sending(access, rt.topics, rt.sender, rt.producer_ids, durable, log_end, rt.metrics,
                        Recalls(store, rt.timers, lambda: int(time.time() * 1000))),
        half_sending=HalfSending(access, rt.topics, rt.sender, store, rt.half_messages, rt.producer_ids, durable, log_end),
        ending=Ending(access, rt.half_messages, views, durable),
        receiving=Receiving(rt.delivery, rt.metrics),
        settling=Settling(rt.delivery, rt.settled_durable),
        topics=ManageTopics(access, rt.topics, store, views, durable, log_end, store, rt.delivery, rt.half_messages,
                            rt.delivery.arrivals),
        groups=ManageGroups(access, rt.delivery.views, store, store.put, views, durable, rt.delivery,
                            lambda: int(time.time() * 1000), redrives),
        heartbeats=Heartbeats(access, rt.producers, views, durable, rt.own_address or OwnAddress.of(settings.host, settings.port),
                              settings.check_url_allow, settings.producer_expiry),
        operator_actions=OperatorActions(access, rt.half_messages, lambda: rt.checks, views, durable),
        producer_transactions=ProducerTransactions(access, rt.producer_txns, rt.producer_ids, rt.topics, rt.sender, rt.delivery,
                                                   rt.delivery.admission),
        journeys=Journeys(access, store, rt.lookups, settings.lookup_topics, settings.lookup_index_files),
        views=views,
        console_views=ConsoleViews(views, rt.half_messages, rt.producer_txns, store, rt.delivery.views, rt.producers,
                                   redrives, settings.transaction_timeout, settings.host, settings.port, rt.disk),
    )
