"""What `halfmq admin` reads show: a table per answer; `--json` prints the broker's answer instead.

A listing fits the terminal whatever its width (``layout.Rows``: a table with every word
whole, else a block per row), never a cell cut to "…"; times are said the way a person
reads them ("3 s ago"); `--json` keeps the broker's epoch-ms fields and adds an ISO 8601
twin of each (``*_at``) for scripts that want a date.
"""

from __future__ import annotations

import datetime
import json
from typing import Any

import msgspec

from halfmq.human_time import due, duration, when

from .layout import Rows

__all__ = ["builtins", "due", "duration", "emit", "when", "with_iso_times"]


def builtins(answer: Any) -> Any:
    """An answer (``halfmq.wire`` structs, or dicts and lists holding them) as the JSON it was: dicts, lists, strings, numbers."""
    return msgspec.to_builtins(answer)


def with_iso_times(data: Any) -> Any:
    """The answer with an ISO 8601 UTC ``*_at`` beside each epoch-ms ``*_timestamp`` (and ``at`` beside ``timestamp``)."""
    if isinstance(data, list):
        return [with_iso_times(v) for v in data]
    if not isinstance(data, dict):
        return data
    out = {k: with_iso_times(v) for k, v in data.items()}
    for key, value in data.items():
        if key.endswith("timestamp") and isinstance(value, int) and not isinstance(value, bool) and value > 0:
            iso = datetime.datetime.fromtimestamp(value / 1000, datetime.UTC).isoformat(timespec="milliseconds")
            out.setdefault(key.removesuffix("timestamp") + "at", iso.replace("+00:00", "Z"))
    return out


def emit(answer: Any, as_json: bool, table: Any) -> int:
    data = builtins(answer)
    if as_json:
        print(json.dumps(with_iso_times(data), indent=2, sort_keys=True))
        return 0
    from rich.console import Console

    Console().print(table(data))
    return 0


def _cell(value: Any) -> str:
    return "-" if value is None else str(value)


def _table(title: str, columns: list[str], rows: list[list[Any]]) -> Rows:
    return Rows(title, columns, [[_cell(v) for v in r] for r in rows])


def _fields(title: str, rows: list[list[Any]]) -> Any:
    """One thing's fields, a field per row: always a table (its values wrap at spaces, fold only a word wider than the width)."""
    from rich.table import Table

    t = Table(title=title)
    t.add_column("field", no_wrap=True)
    t.add_column("value", overflow="fold")
    for r in rows:
        t.add_row(*(_cell(v) for v in r))
    return t


def transactions(data: dict) -> Any:
    return _table(f"{data['count']} {data['state']} transaction(s)",
                  ["transaction id", "producer group", "topic", "age", "checks", "last answer", "next check"],
                  [[t["transaction_id"], t["producer_group"], t["message"]["topic"], duration(t["age_seconds"]), t["check_times"],
                    t["last_answer"], due(t["next_check_timestamp"])] for t in data["transactions"]])


def transaction(t: dict) -> Any:
    rows = [[k, t.get(k)] for k in ("transaction_id", "producer_group", "state")] + [["age", duration(t.get("age_seconds"))]]
    rows += [[k, t.get(k)] for k in ("check_times", "last_answer")]
    rows += [["last check", when(t.get("last_check_timestamp"))],
             ["next check", due(t.get("next_check_timestamp")) if t.get("state") == "pending" else "-"],
             ["topic", t["message"]["topic"]], ["msg_id", t["message"]["msg_id"]], ["body", t["message"]["body"][:200]]]
    return _fields("transaction", rows)


def topics(data: dict) -> Any:
    return _table("topics", ["topic", "queues", "messages (max offset sum)"],
                  [[t["name"], len(t["queues"]), sum(q["max_offset"] for q in t["queues"])] for t in data["topics"]])


def topic(t: dict) -> Any:
    """`topics show`: its retention in the title (the broker's unless it has its own), each queue's earliest retained
    offset (min) and end."""
    return _table(f"topic {t['name']} ({retention(t)})", ["queue", "min offset (earliest retained)", "max offset"],
                  [[q["queue_id"], q["min_offset"], q["max_offset"]] for q in t["queues"]])


def retention(t: dict) -> str:
    """A topic's own retention as a line: ``retention 2 d, 1000000 bytes a queue``, or the broker's."""
    ms, size = t.get("retention_ms"), t.get("retention_bytes")
    if ms is None and size is None:
        return "retention: the broker's"
    parts = ["retention " + (duration(ms / 1000) if ms is not None else "the broker's")]
    if size is not None:
        parts.append(f"{size} bytes a queue")
    return ", ".join(parts)


def groups(data: dict) -> Any:
    return _table("consumer groups", ["group", "topics", "lag", "in flight", "retrying", "dlq depth"],
                  [[g["group"], ", ".join(g["topics"]), g["lag"], g["in_flight"], g["retrying"], g["dlq_depth"]] for g in data["groups"]])


def group(data: dict) -> Any:
    """`groups show`: the group as a whole (lag, in flight, retrying, DLQ depth) and one row per topic."""
    from rich.console import Group

    summary = data["summary"]
    head = (f"group {summary['group']}: lag {summary['lag']}, in flight {summary['in_flight']}, "
            f"retrying {summary['retrying']}, DLQ depth {summary['dlq_depth']}")
    return Group(head, _table("topics", ["topic", "queues", "committed", "max offset", "lag", "in flight", "skipped by retention"],
                              [[t["topic"], len(t["queues"]), sum(q["committed_offset"] for q in t["queues"]),
                                sum(q["max_offset"] for q in t["queues"]), sum(q["lag"] for q in t["queues"]),
                                sum(q["in_flight"] for q in t["queues"]), sum(q.get("retention_skipped", 0) for q in t["queues"])]
                               for t in data["topics"]]))


def group_lag(data: dict) -> Any:
    """`groups lag`: one row per queue, where the lag is."""
    return _table(f"group {data['group']}", ["topic", "queue", "committed", "max offset", "lag", "in flight"],
                  [[t["topic"], q["queue_id"], q["committed_offset"], q["max_offset"], q["lag"], q["in_flight"]]
                   for t in data["topics"] for q in t["queues"]])


def dlq(data: dict) -> Any:
    """A page of dead letters: which of how many, where the next page starts, and when each arrived."""
    messages, page = data["messages"], data["page"]
    if messages:
        title = f"DLQ of {data['group']}: offsets {page['first']}–{page['last']}, {page['shown']} of {page['depth']}"
        if page["next"] is not None:
            title += f" (next page: --offset {page['next']})"
    else:
        title = f"DLQ of {data['group']}: none here, {data['depth']} in all"
    from rich.console import Group

    return Group(title, _table("dead letters", ["offset", "msg_id", "from topic", "arrived", "reason", "body"],
                               [[m["queue_offset"], m["msg_id"], m["properties"].get("REAL_TOPIC"), when(m.get("store_timestamp")),
                                 m["properties"].get("DLQ_REASON"), m["body"][:60]] for m in messages]))


def producers(data: dict) -> Any:
    return _table("producers", ["producer group", "client id", "check url", "last heartbeat"],
                  [[g["producer_group"], p["client_id"], p["check_url"], when(p.get("last_heartbeat_timestamp"))]
                   for g in data["groups"] for p in g["producers"]])


def transactional_ids(data: dict) -> Any:
    return _table("transactional ids", ["transactional id", "producer id", "epoch", "state", "open txn", "open age s", "aborted by"],
                  [[t["transactional_id"], t["producer_id"], t["epoch"], t["state"], (t["open"] or {}).get("transaction"),
                    (t["open"] or {}).get("age_seconds"), t["aborted_by"]] for t in data["transactional_ids"]])


NODE_COLUMNS = [("node", "node_id"), ("role", "role"), ("url", "url"), ("log end", "log_end"), ("durable", "durable_offset"),
                ("lag", "lag"), ("in sync", "in_sync")]


def leader_change(last: dict | None) -> str:
    """The line about the last change of leader: a set's first election is no failover, and is not called one."""
    if not last:
        return "last failover: none seen by this node"
    if not last.get("previous"):
        return f"first election: {last['leader']} in term {last['term']}, {when(last.get('timestamp'))}"
    return f"last failover: {last['leader']} in term {last['term']} after {last['previous']}, {when(last.get('timestamp'))}"


def cluster(data: dict) -> Any:
    """One row per node (GET /v1/cluster's ``nodes``) under the set's term, leader, ack mode, high watermark, last failover."""
    from rich.console import Group

    table = _table("broker set" if "term" in data else f"broker set ({data.get('mode', 'single node')})", [c for c, _ in NODE_COLUMNS],
                   [[_yes_no(n.get(k)) if k == "in_sync" else n.get(k) for _, k in NODE_COLUMNS] for n in data.get("nodes") or []])
    if "term" not in data:
        return table
    leader = (data.get("leader") or {}).get("node_id") or "none"
    summary = (f"as {data['node_id']} ({data['role']}) sees it: term {data['term']}, leader {leader}, ack {data['ack']}, "
               f"high watermark {data['high_watermark']}" + (f", etcd: {data['etcd_error']}" if data.get("etcd_error") else "")
               + (f", replication stopped: {data['replication_error']}" if data.get("replication_error") else ""))
    lines = [summary, leader_change(data.get('last_failover'))]
    if data["role"] != "leader":
        lines.append(picture_line(data))
    return Group(*lines, table)


def picture_line(data: dict) -> str:
    """On a follower: whose figures the other rows are, and how old (GET /v1/cluster's ``picture_from``, ``picture_age_seconds``)."""
    if not data.get("picture_from"):
        return "no figures from a leader yet: only this node's own offsets are shown"
    return (f"the other nodes' rows and in sync are the leader {data['picture_from']}'s figures, "
            f"{data.get('picture_age_seconds')} s old; this node's offsets are its own")


def _yes_no(value: bool | None) -> str | None:
    return None if value is None else ("yes" if value else "no")


def offset_reset(data: dict) -> Any:
    """`groups reset-offsets`: the plan per queue (from → to), and whether it was applied or only a dry run."""
    what = "reset" if data["applied"] else "dry run, nothing changed"
    return _table(f"{data['group']} on {data['topic']} to {data['to']}: {what}", ["queue", "from", "to", "moves", "in flight"],
                  [[q["queue_id"], q["from_offset"], q["to_offset"], f"{q['to_offset'] - q['from_offset']:+d}", q["in_flight"]]
                   for q in data["queues"]])


def redrive(data: dict) -> Any:
    """A DLQ redrive: its state and how far it got."""
    return _fields(f"DLQ redrive of {data['group']}: {data['state']}", [
        ["resent", f"{data['resent']} of {data['total']}"], ["missing", data["missing"]],
        ["offsets", f"{data['first_offset']}–{data['end_offset']} (next {data['next_offset']})"],
        ["rate", f"{data['rate_per_second']:g}/s"], ["started", when(data["started_timestamp"])],
        ["ended", when(data["ended_timestamp"]) if data.get("ended_timestamp") else "-"],
        *([["error", data["error"]]] if data.get("error") else [])])


def done(data: dict) -> Any:
    return _fields("done", [[k, v if not isinstance(v, dict | list) else json.dumps(v)[:80]] for k, v in data.items()])


def journey(data: dict) -> Any:
    """`messages show`: the message, then its events in time order."""
    m = data["message"]
    place = f"{m['topic']}/{m['queue_id']}" + (f"@{m['queue_offset']}" if m.get("queue_offset") is not None else "")
    title = f"message {m['msg_id']} on {place}: {m['state']}" + (f", keys {' '.join(m['keys'])}" if m.get("keys") else "")
    return _table(title, ["when", "event", "group", "where", "detail"],
                  [[when(e.get("at_ms")), e["kind"], e.get("group"), _where(e), _detail(e)]
                   for e in data["events"]])


def found_messages(data: dict) -> Any:
    """`messages find KEY`: the messages sent with the key, newest first."""
    return _table(f"{len(data['messages'])} message(s) with key {data['key']!r}, newest first",
                  ["message id", "topic", "queue", "offset", "stored", "state", "keys"],
                  [[m["msg_id"], m["topic"], m["queue_id"], m.get("queue_offset"), when(m["store_timestamp"]), m["state"],
                    " ".join(m.get("keys", []))] for m in data["messages"]])


def _where(event: dict) -> str | None:
    if event.get("topic") is None:
        return None
    return f"{event['topic']}/{event.get('queue_id', '-')}@{event.get('queue_offset', '-')}"


def _detail(event: dict) -> str | None:
    parts = [f"answer {event['answer']}" if event.get("answer") else None, f"due {when(event['due_ms'])}" if event.get("due_ms") else None,
             f"transaction {event['transaction_id']}" if event.get("transaction_id") else None, event.get("detail")]
    return ", ".join(p for p in parts if p) or None
