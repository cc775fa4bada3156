"""The one route table of HTTP API v1 (and /healthz, /metrics): the front serves it, /openapi.json walks it.

The hot routes come first, so the traffic's routes are matched after as few tries as before. A broker set adds its
view and replication routes (``routes.cluster.ROUTES``) in its table only (the composition root, broker/runtime/app.py).
"""

from __future__ import annotations

from .router import Route
from .routes import (
    consumer_groups,
    messages,
    operations,
    operator_views,
    producer_ids,
    topics,
    transaction_batches,
    transactional_ids,
    transactions,
)

HOT_ROUTES: list[Route] = [*topics.HOT_ROUTES, *consumer_groups.HOT_ROUTES, *transactions.HOT_ROUTES,
                           *transaction_batches.HOT_ROUTES, *transactional_ids.HOT_ROUTES]
ROUTES: list[Route] = [*HOT_ROUTES, *topics.ROUTES, *operator_views.ROUTES, *consumer_groups.ROUTES,
                       *transactions.ROUTES, *transactional_ids.ROUTES, *producer_ids.ROUTES, *operations.ROUTES,
                       *messages.ROUTES]
TITLE, VERSION = "halfmq broker", "1"
