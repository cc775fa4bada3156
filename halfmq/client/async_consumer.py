"""The old home of ``AsyncConsumer``, which lives with its blocking wrapper in ``consumer`` now.

Kept while ``halfmq.client`` still maps the name here; delete it once the map says ``halfmq.client.consumer``.
"""

from .consumer import AsyncConsumer

__all__ = ["AsyncConsumer"]
