"""A topic's configs as Kafka's admin clients set them (CreateTopics, AlterConfigs, IncrementalAlterConfigs), read as
the topic's own retention that the HTTP front's ``POST /v1/topics`` and ``PATCH /v1/topics/{topic}`` take.

Pure functions: they decide the retention a request asks for, or refuse it (INVALID_CONFIG, INVALID_REQUEST) before
anything changes. ``broker`` is what DescribeConfigs shows a topic without its own limits (admin_handlers.py's
``described_configs``): ``retention.ms`` and ``retention.bytes`` are honoured; the other names there are the broker's
(``cleanup.policy=delete``, ``max.message.bytes``): set to the value they have they change nothing (a tool writing back
what it read), to another they are refused; any other name is refused, as Kafka refuses a config name it does not
know. A null value or a DELETE puts the broker's limit back; Kafka's -1 (no limit) is the broker's limit when the
broker has none (``retention.bytes`` by default), and refused otherwise: a topic cannot be kept past the broker's
bound for ever.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .errors import InvalidConfig, InvalidRequest

RETENTION_MS, RETENTION_BYTES = "retention.ms", "retention.bytes"
NO_LIMIT = -1
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
"""IncrementalAlterConfigs' ConfigOperation values."""

Retention = tuple[int | None, int | None]
"""(retention_ms, retention_bytes) of a topic: None is the broker's limit."""


def _limit(name: str, value: str | None, broker: Mapping[str, str]) -> int | None:
    if value is None:
        return None
    try:
        limit = int(value.strip())
    except ValueError:
        raise InvalidConfig(f"{name}={value!r} is not a whole number") from None
    if limit == NO_LIMIT and broker.get(name) == str(NO_LIMIT):
        return None
    if limit < 0:
        raise InvalidConfig(f"{name}={value}: a topic keeps its messages within a limit (the broker's is "
                            f"{broker.get(name)}); give one, or null for the broker's")
    return limit


def _unchanged(name: str, value: str | None, broker: Mapping[str, str]) -> None:
    """Nothing for one of the broker's configs set to the value it has (or deleted); refused otherwise."""
    if name not in broker:
        raise InvalidConfig(f"{name!r} is not a topic config halfmq honours (only {RETENTION_MS} and {RETENTION_BYTES})")
    if value is not None and value.strip() != broker[name]:
        raise InvalidConfig(f"{name} is {broker[name]} on every topic (the broker's setting): it cannot be {value}")


def named_retention(configs: Iterable[tuple[str, str | None]], broker: Mapping[str, str]) -> Retention:
    """The retention a CreateTopics topic's configs ask for, or the whole set an AlterConfigs replaces a topic's with:
    a limit not named is the broker's."""
    asked: dict[str, int | None] = {}
    for name, value in configs:
        if name in (RETENTION_MS, RETENTION_BYTES):
            asked[name] = _limit(name, value, broker)
        else:
            _unchanged(name, value, broker)
    return asked.get(RETENTION_MS), asked.get(RETENTION_BYTES)


def altered_retention(ops: Iterable[tuple[str, int, str | None]], current: Retention, broker: Mapping[str, str]) -> Retention:
    """IncrementalAlterConfigs: each named limit SET, or DELETEd (the broker's again), the others kept; APPEND and
    SUBTRACT are for list configs, which no config here is (INVALID_REQUEST, as Kafka answers)."""
    changed = {RETENTION_MS: current[0], RETENTION_BYTES: current[1]}
    for name, op, value in ops:
        if op not in (SET, DELETE):
            what = {APPEND: "append", SUBTRACT: "subtract"}.get(op, f"operation {op}")
            raise InvalidRequest(f"config value {what} is not allowed for {name!r}: not a list")
        if name in changed:
            changed[name] = _limit(name, value, broker) if op == SET else None
        else:
            _unchanged(name, value if op == SET else None, broker)
    return changed[RETENTION_MS], changed[RETENTION_BYTES]
