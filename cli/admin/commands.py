"""`halfmq admin transactions|topics|groups|dlq|producers|cluster|transactional-ids|messages ...` against a running broker.

The mqadmin / kafka-transactions.sh / rpk habits: every read prints a table, or
the broker's JSON with ``--json``; every action prints what the broker answered.
Each verb is one or two calls of the SDK's ``AdminClient`` (``calls.call``): no HTTP here.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from halfmq import human_time

from . import tables
from .calls import BROKER_URL_ENV, TOKEN_ENV, call

if TYPE_CHECKING:
    from halfmq.client.admin import AdminClient

Fetch = Callable[["AdminClient", argparse.Namespace], Any]


def _cluster(admin: AdminClient, _: argparse.Namespace) -> Any:
    """The set's view where the broker has one (a replicated set); a single node otherwise."""
    found = admin.describe_cluster()
    if found is not None:
        return found
    health = admin.health()
    return {"mode": "single node", "nodes": [{"node_id": None, "url": admin.answered_by, "role": "single node",
                                              "log_end": health.commit_log_end_offset}]}


def _group(admin: AdminClient, args: argparse.Namespace) -> Any:
    """`groups show`: the group's line of `groups list` (all groups, the broker's own too) and its per-queue state."""
    detail = admin.describe_group(args.group)  # an unknown group is the broker's CONSUMER_GROUP_NOT_FOUND line
    summary = next((g for g in admin.list_groups(system=True).groups if g.group == args.group), None)
    if summary is None:
        raise SystemExit(f"broker refused: CONSUMER_GROUP_NOT_FOUND: no consumer group {args.group!r} "
                         "(`halfmq admin groups list` names them)")
    return {"summary": summary, **tables.builtins(detail)}


_UNITS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def _ago_ms(text: str) -> int:
    """``90m``, ``12h``, ``7d``, ``30s``, ``500ms`` (a bare number: seconds) in milliseconds."""
    number = text.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = text[len(number):] or "s"
    try:
        value = float(number)
    except ValueError:
        value = -1.0
    if unit not in _UNITS or value < 0:
        raise SystemExit(f"--by-duration {text!r}: a duration such as 30s, 90m, 12h or 7d")
    return int(value * _UNITS[unit])


def _retention_ms(text: str | None) -> int | None:
    try:
        return None if text is None else human_time.retention_ms(text)
    except ValueError:
        raise SystemExit(f"--retention {text!r}: a duration such as 30s, 12h or 7d, or {human_time.BROKERS!r}") from None


def _retention_bytes(text: str | None) -> int | None:
    try:
        return None if text is None else human_time.retention_bytes(text)
    except ValueError:
        raise SystemExit(f"--retention-bytes {text!r}: a number of bytes, or {human_time.BROKERS!r}") from None


def _create_topic(admin: AdminClient, args: argparse.Namespace) -> Any:
    return admin.create_topic(args.name, args.queues, retention_ms=_retention_ms(args.retention),
                              retention_bytes=_retention_bytes(args.retention_bytes))


def _alter_topic(admin: AdminClient, args: argparse.Namespace) -> Any:
    """`topics alter`: only the limits named change; ``broker`` puts one back to the broker's."""
    if args.retention is None and args.retention_bytes is None:
        raise SystemExit("name what changes: --retention and/or --retention-bytes")
    changes = {}
    if args.retention is not None:
        changes["retention_ms"] = _retention_ms(args.retention)
    if args.retention_bytes is not None:
        changes["retention_bytes"] = _retention_bytes(args.retention_bytes)
    return admin.alter_topic(args.name, **changes)


_RETENTION_ARGS: list[tuple[tuple[str, ...], dict]] = [
    (("--retention",), {"metavar": "DURATION", "help": "the topic's own retention: 30s, 12h, 7d (`broker`: the broker's)"}),
    (("--retention-bytes",), {"metavar": "BYTES", "help": "the newest bytes each queue keeps (`broker`: no limit of its own)"}),
]


def _epoch_ms(text: str) -> int:
    """An ISO 8601 date and time (UTC unless it names its offset) in epoch milliseconds (``human_time.epoch_ms``)."""
    try:
        return human_time.epoch_ms(text)
    except ValueError:
        raise SystemExit(f"--to-datetime {text!r}: an ISO 8601 time such as 2026-11-29T07:00:00Z") from None


def _reset_offsets(admin: AdminClient, args: argparse.Namespace) -> Any:
    """`groups reset-offsets`: exactly one target (kafka-consumer-groups.sh's --to-earliest, --to-datetime, …)."""
    targets = {"earliest": args.to_earliest, "latest": args.to_latest, "timestamp": args.to_datetime is not None,
               "duration": args.by_duration is not None, "offset": args.to_offset is not None}
    chosen = [name for name, given in targets.items() if given]
    if len(chosen) != 1:
        raise SystemExit("name one target: --to-earliest, --to-latest, --to-datetime, --by-duration or --to-offset")
    return admin.reset_offsets(args.group, args.topic, chosen[0], queue_id=args.queue, offset=args.to_offset,
                               timestamp_ms=_epoch_ms(args.to_datetime) if args.to_datetime is not None else None,
                               ago_ms=_ago_ms(args.by_duration) if args.by_duration is not None else None,
                               dry_run=args.dry_run, force=args.force)


READS: dict[tuple[str, str], tuple[Fetch, Callable[[Any], Any], list[tuple[tuple[str, ...], dict]]]] = {
    ("transactions", "list"): (lambda admin, a: admin.list_transactions(a.state, a.limit), tables.transactions,
                               [(("--state",), {"default": "pending", "choices": ["pending", "committed", "rolled_back", "discarded"]}),
                                (("--limit",), {"type": int, "default": 100})]),
    ("transactions", "show"): (lambda admin, a: admin.describe_transaction(a.id), tables.transaction, [(("id",), {})]),
    ("topics", "list"): (lambda admin, a: admin.list_topics(), tables.topics, []),
    ("topics", "show"): (lambda admin, a: admin.describe_topic(a.name), tables.topic, [(("name",), {})]),
    ("groups", "list"): (lambda admin, a: admin.list_groups(), tables.groups, []),
    ("groups", "show"): (_group, tables.group, [(("group",), {})]),
    ("groups", "lag"): (lambda admin, a: admin.describe_group(a.group), tables.group_lag, [(("group",), {})]),
    ("dlq", "list"): (lambda admin, a: admin.list_dead_letters(a.group, a.offset, a.max), tables.dlq,
                      [(("group",), {}), (("--offset",), {"type": int, "default": 0}), (("--max",), {"type": int, "default": 100})]),
    ("dlq", "redrive-status"): (lambda admin, a: admin.redrive(a.group), tables.redrive, [(("group",), {})]),
    ("producers", "list"): (lambda admin, a: admin.list_producers(), tables.producers, []),
    ("cluster", "show"): (_cluster, tables.cluster, []),
    ("transactional-ids", "list"): (lambda admin, a: admin.list_transactional_ids(), tables.transactional_ids, []),
    ("messages", "show"): (lambda admin, a: admin.message_journey(a.msg_id, a.topic), tables.journey,
                           [(("msg_id",), {}), (("--topic",), {"help": "the message's topic (an id on several topics needs it)"})]),
    ("messages", "find"): (lambda admin, a: admin.find_messages(a.key, a.limit, a.topic), tables.found_messages,
                           [(("key",), {}), (("--limit",), {"type": int, "default": 50}), (("--topic",), {"help": "only this topic's"})]),
}

ACTIONS: dict[tuple[str, str], tuple[Fetch, list[tuple[tuple[str, ...], dict]], str]] = {
    ("transactions", "commit"): (lambda admin, a: admin.force_commit(a.id), [(("id",), {})],
                                 "force-commit a half message: consumers get it"),
    ("transactions", "rollback"): (lambda admin, a: admin.force_rollback(a.id), [(("id",), {})],
                                   "force-rollback a half message: nobody gets it"),
    ("transactions", "recheck"): (lambda admin, a: admin.recheck(a.id), [(("id",), {})],
                                  "ask the producer's check endpoint again, now"),
    ("transactions", "resend"): (lambda admin, a: admin.resend(a.id), [(("id",), {})],
                                 "a discarded transaction back to pending (checked again)"),
    ("topics", "create"): (_create_topic, [(("name",), {}), (("--queues",), {"type": int}), *_RETENTION_ARGS],
                           "create a topic"),
    ("topics", "alter"): (_alter_topic, [(("name",), {}), *_RETENTION_ARGS],
                          "change a topic's own retention (older messages become unreadable at the next retention pass)"),
    ("topics", "delete"): (lambda admin, a: admin.delete_topic(a.name, a.force),
                           [(("name",), {}), (("--force",), {"action": "store_true",
                                                              "help": "although halves are pending or deliveries in flight"})],
                           "delete a topic (refused while it has pending half messages or deliveries in flight)"),
    ("messages", "recall"): (lambda admin, a: admin.recall(a.topic, a.recall_handle),
                             [(("topic",), {}), (("recall_handle",), {"help": "the recall_handle the timed message's send answered"})],
                             "cancel a delayed message before it is due (RecallTooLate once due)"),
    ("dlq", "resend"): (lambda admin, a: admin.resend_dead_letter(a.group, a.offset),
                        [(("group",), {}), (("offset",), {"type": int})], "put a DLQ message back on its topic"),
    ("dlq", "redrive"): (lambda admin, a: admin.start_redrive(a.group, a.max, a.rate),
                         [(("group",), {}), (("--max",), {"type": int, "help": "at most this many (default: all there now)"}),
                          (("--rate",), {"type": float, "help": "resends a second (default: the broker's DLQ_REDRIVE_RATE)"})],
                         "resend every dead letter of a group to its topic, at a rate, in the background"),
    ("dlq", "redrive-stop"): (lambda admin, a: admin.stop_redrive(a.group), [(("group",), {})], "stop a group's DLQ redrive"),
    ("transactional-ids", "abort"): (lambda admin, a: admin.force_abort(a.tid), [(("tid",), {})],
                                     "abort a transactional id's open transaction"),
    ("groups", "delete"): (lambda admin, a: admin.delete_group(a.group, a.force),
                           [(("group",), {}), (("--force",), {"action": "store_true", "help": "although deliveries are in flight"})],
                           "delete a consumer group's offsets and progress (refused while it has deliveries in flight)"),
    ("groups", "reset-offsets"): (_reset_offsets, [
        (("group",), {}), (("topic",), {}),
        (("--to-earliest",), {"action": "store_true", "help": "each queue's first retained message"}),
        (("--to-latest",), {"action": "store_true", "help": "each queue's end: skip the backlog"}),
        (("--to-datetime",), {"metavar": "ISO_TIME", "help": "the first message stored at or after this time (UTC unless given)"}),
        (("--by-duration",), {"metavar": "AGO", "help": "the first message stored at or after this long ago: 30s, 90m, 12h, 7d"}),
        (("--to-offset",), {"type": int, "metavar": "N", "help": "this queue offset (clamped to each queue's range)"}),
        (("--queue",), {"type": int, "help": "one queue only (default: every queue of the topic)"}),
        (("--dry-run",), {"action": "store_true", "help": "print the plan, change nothing"}),
        (("--force",), {"action": "store_true", "help": "reset although deliveries are in flight (they are delivered again)"}),
    ], "move a group's committed offsets on a topic (refused while it has deliveries in flight, unless --force)"),
}
ACTION_TABLES: dict[tuple[str, str], Callable[[Any], Any]] = {
    ("groups", "reset-offsets"): tables.offset_reset, ("dlq", "redrive"): tables.redrive, ("dlq", "redrive-stop"): tables.redrive}

NOUNS = {
    "transactions": "half messages: list, show, force commit / rollback, recheck, resend discarded",
    "topics": "topics and their queues' offsets",
    "groups": "consumer groups: lag, in-flight, retries, DLQ depth; reset their offsets",
    "dlq": "a consumer group's dead letters; resend one, or redrive them all at a rate",
    "producers": "registered producers and their check URLs",
    "cluster": "the broker set (GET /v1/cluster, or a single node)",
    "transactional-ids": "Kafka-style transactional ids and their open transactions",
    "messages": "where is my message: its journey by id (show), the messages sent with a key (find); recall a delayed one",
}


def _common(p: argparse.ArgumentParser, json_flag: bool) -> None:
    p.add_argument("--broker", help=f"broker URL, or a set's node URLs comma-separated (default: ${BROKER_URL_ENV}, "
                                    "or http://127.0.0.1:10911)")
    p.add_argument("--token", help=f"admin bearer token (default: ${TOKEN_ENV}, else the admin.token `halfmq up` wrote "
                                   "in ./data/auth, or beside $HALFMQ_BROKER_AUTH_FILE)")
    if json_flag:
        p.add_argument("--json", action="store_true", help="print the broker's JSON answer instead of a table")


def _read_command(fetch: Fetch, table: Callable[[Any], Any]) -> Callable[[argparse.Namespace], int]:
    return lambda args: tables.emit(call(args, fetch), args.json, table)


def _action_command(fetch: Fetch, table: Callable[[Any], Any]) -> Callable[[argparse.Namespace], int]:
    return lambda args: tables.emit(call(args, fetch), args.json, table)


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
        p.set_defaults(func=_action_command(fetch, ACTION_TABLES.get((noun, verb), tables.done)))
