"""The composition root (cosmicpython's bootstrap.py): it opens the store, builds the domain services, the use cases and
the fronts, and starts what only a writer runs. Nothing imports it but the entry points (the ``halfmq`` command,
``halfmq.testing``, the benchmarks and the tests): every arrow below it points down (docs/architecture.md).

- ``services``: ``BrokerRuntime``, every service one broker process runs, opened from its settings;
- ``use_cases``: each use case built with the collaborators it names;
- ``app``: the ASGI app (the HTTP front, the console, the gates) and its lifespan;
- ``leader_gate``: in a broker set, what a node that does not lead serves;
- ``set_roles``: in a broker set, the services built again on each change of the node's role.
"""

from __future__ import annotations

from .services import BrokerRuntime
from .set_roles import SetRoles

__all__ = ["BrokerRuntime", "SetRoles"]
