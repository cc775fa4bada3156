"""`halfmq admin transactions|topics|groups|dlq|producers|cluster|transactional-ids|messages ...` against a running broker.

The mqadmin / kafka-transactions.sh / rpk habits: every read prints a table, or
the broker's JSON with ``--json``; every action prints what the broker answered.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from . import tables
from .broker_api import BROKER_URL_ENV, TOKEN_ENV, BrokerApi, seg

Fetch = Callable[[BrokerApi, argparse.Namespace], Any]


def _api(args: argparse.Namespace) -> BrokerApi:
    return BrokerApi(args.broker, args.token)


def _cluster(api: BrokerApi, _: argparse.Namespace) -> Any:
    """GET /v1/cluster where the broker has it (a replicated set); a single node otherwise."""
    found = api.get_or_none("/v1/cluster")
    if found is not None:
        return found
    health = api.get("/healthz")
    return {"mode": "single node", "nodes": [{"node_id": None, "url": api.url, "role": "single node",
                                              "log_end": health.get("commit_log_end_offset")}]}


def _group_lag(api: BrokerApi, args: argparse.Namespace) -> Any:
    return api.get(f"/v1/consumer-groups/{seg(args.group)}")


def _group(api: BrokerApi, args: argparse.Namespace) -> Any:
    """`groups show`: the group's line of `groups list` (all groups, the broker's own too) and its per-queue state."""
    detail = _group_lag(api, args)  # an unknown group is the broker's CONSUMER_GROUP_NOT_FOUND line
    listed = api.get("/v1/consumer-groups", system="true")["groups"]
    summary = next((g for g in listed if g["group"] == args.group), None)
    if summary is None:
        raise SystemExit(f"broker refused: CONSUMER_GROUP_NOT_FOUND: no consumer group {args.group!r} "
                         "(`halfmq admin groups list` names them)")
    return {"summary": summary, **detail}


READS: dict[tuple[str, str], tuple[Fetch, Callable[[Any], Any], list[tuple[tuple[str, ...], dict]]]] = {
    ("transactions", "list"): (lambda api, a: api.get("/v1/transactions", state=a.state, limit=a.limit), tables.transactions,
                               [(("--state",), {"default": "pending", "choices": ["pending", "committed", "rolled_back", "discarded"]}),
                                (("--limit",), {"type": int, "default": 100})]),
    ("transactions", "show"): (lambda api, a: api.get(f"/v1/transactions/{seg(a.id)}"), tables.transaction, [(("id",), {})]),
    ("topics", "list"): (lambda api, a: api.get("/v1/topics"), tables.topics, []),
    ("topics", "show"): (lambda api, a: api.get(f"/v1/topics/{seg(a.name)}"), tables.topic, [(("name",), {})]),
    ("groups", "list"): (lambda api, a: api.get("/v1/consumer-groups"), tables.groups, []),
    ("groups", "show"): (_group, tables.group, [(("group",), {})]),
    ("groups", "lag"): (_group_lag, tables.group_lag, [(("group",), {})]),
    ("dlq", "list"): (lambda api, a: api.get(f"/v1/consumer-groups/{seg(a.group)}/dlq", offset=a.offset, max=a.max), tables.dlq,
                      [(("group",), {}), (("--offset",), {"type": int, "default": 0}), (("--max",), {"type": int, "default": 100})]),
    ("producers", "list"): (lambda api, a: api.get("/v1/producers"), tables.producers, []),
    ("cluster", "show"): (_cluster, tables.cluster, []),
    ("transactional-ids", "list"): (lambda api, a: api.get("/v1/transactional-ids"), tables.transactional_ids, []),
    ("messages", "show"): (lambda api, a: api.get(f"/v1/messages/{seg(a.msg_id)}", topic=a.topic), tables.journey,
                           [(("msg_id",), {}), (("--topic",), {"help": "the message's topic (an id on several topics needs it)"})]),
    ("messages", "find"): (lambda api, a: api.get("/v1/messages", key=a.key, limit=a.limit, topic=a.topic), tables.found_messages,
                           [(("key",), {}), (("--limit",), {"type": int, "default": 50}), (("--topic",), {"help": "only this topic's"})]),
}

ACTIONS: dict[tuple[str, str], tuple[Fetch, list[tuple[tuple[str, ...], dict]], str]] = {
    ("transactions", "commit"): (lambda api, a: api.post(f"/v1/transactions/{seg(a.id)}/force-commit"), [(("id",), {})],
                                 "force-commit a half message: consumers get it"),
    ("transactions", "rollback"): (lambda api, a: api.post(f"/v1/transactions/{seg(a.id)}/force-rollback"), [(("id",), {})],
                                   "force-rollback a half message: nobody gets it"),
    ("transactions", "recheck"): (lambda api, a: api.post(f"/v1/transactions/{seg(a.id)}/recheck"), [(("id",), {})],
                                  "ask the producer's check endpoint again, now"),
    ("transactions", "resend"): (lambda api, a: api.post(f"/v1/transactions/{seg(a.id)}/resend"), [(("id",), {})],
                                 "a discarded transaction back to pending (checked again)"),
    ("topics", "create"): (lambda api, a: api.post("/v1/topics", {"name": a.name, "queues": a.queues}),
                           [(("name",), {}), (("--queues",), {"type": int})], "create a topic"),
    ("dlq", "resend"): (lambda api, a: api.post(f"/v1/consumer-groups/{seg(a.group)}/dlq/{a.offset}/resend"),
                        [(("group",), {}), (("offset",), {"type": int})], "put a DLQ message back on its topic"),
    ("transactional-ids", "abort"): (lambda api, a: api.post(f"/v1/transactional-ids/{seg(a.tid)}/force-abort"), [(("tid",), {})],
                                     "abort a transactional id's open transaction"),
}

NOUNS = {
    "transactions": "half messages: list, show, force commit / rollback, recheck, resend discarded",
    "topics": "topics and their queues' offsets",
    "groups": "consumer groups: lag, in-flight, retries, DLQ depth",
    "dlq": "a consumer group's dead letters, and resend",
    "producers": "registered producers and their check URLs",
    "cluster": "the broker set (GET /v1/cluster, or a single node)",
    "transactional-ids": "Kafka-style transactional ids and their open transactions",
    "messages": "where is my message: its journey by id (show), the messages sent with a key (find)",
}


def _common(p: argparse.ArgumentParser, json_flag: bool) -> None:
    p.add_argument("--broker", help=f"broker URL (default: ${BROKER_URL_ENV}, or http://127.0.0.1:10911)")
    p.add_argument("--token", help=f"admin bearer token (default: ${TOKEN_ENV})")
    if json_flag:
        p.add_argument("--json", action="store_true", help="print the broker's JSON answer instead of a table")


def _read_command(fetch: Fetch, table: Callable[[Any], Any]) -> Callable[[argparse.Namespace], int]:
    return lambda args: tables.emit(fetch(_api(args), args), args.json, table)


def _action_command(fetch: Fetch) -> Callable[[argparse.Namespace], int]:
    return lambda args: tables.emit(fetch(_api(args), args), args.json, tables.done)


def add_verbs(verbs: argparse._SubParsersAction) -> None:
    """Add the broker verbs to `halfmq admin` (next to init, users, tokens, check-secret)."""
    subs = {noun: verbs.add_parser(noun, help=text).add_subparsers(dest=f"{noun}_command", required=True)
            for noun, text in NOUNS.items()}
    for (noun, verb), (fetch, table, arguments) in READS.items():
        p = subs[noun].add_parser(verb)
        for names, options in arguments:
            p.add_argument(*names, **options)
        _common(p, json_flag=True)
        p.set_defaults(func=_read_command(fetch, table))
    for (noun, verb), (fetch, arguments, text) in ACTIONS.items():
        p = subs[noun].add_parser(verb, help=text)
        for names, options in arguments:
            p.add_argument(*names, **options)
        _common(p, json_flag=True)
        p.set_defaults(func=_action_command(fetch))
