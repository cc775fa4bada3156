"""What every front calls: the HTTP routes, the RocketMQ 5 gRPC front and the console.

A front authenticates (a bearer token, a RocketMQ signature, the console's
cookie), parses its request, calls one use case and maps its errors; it holds
no domain logic. A use case authorizes the principal (the guard's policies,
producer-id ownership, name rules), drives the domain services on the
runtime and gives back plain data (the API's answer shapes). One module per job:
``sending`` (plain and idempotent), ``half_sending``, ``ending``, ``receiving``,
``settling``, ``producer_txns`` (the producer-transaction steps and producer ids),
``producers`` (heartbeats), ``topics``, ``groups``, ``operator_actions`` and the
read ``views`` / ``console_views``; ``caller`` (who asks), ``durability`` (the
fsync wait), ``errors`` (the domain's exceptions as typed errors) and
``records`` (what the gRPC front maps) serve them. Nothing here imports a web or
RPC framework or a front (import contracts in pyproject.toml).
"""
