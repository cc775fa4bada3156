"""Render docs/benchmarks.md from one `halfmq bench` JSON file and the peers' results directory.

    python -m halfmq.bench.report RESULT.json [--peers /tmp/peer_results] [--out docs/benchmarks.md]

The page is generated, never edited by hand (the analysis below the figures
comes from ``--notes``, a hand-written file): the machine, the date, the exact
commands, the gates with met/missed, halfmq side by side with the peers
(ratios halfmq / peer), every halfmq case with its in-run baseline ratio, the
baselines, and the peers' own table. Figures from different sessions or
machines are not comparable; the page says which session each came from.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from . import footprint
from . import gates as gate_rules
from . import peers as peer_results
from .peers import Figure
from .results import load

DOCS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"


@dataclass(frozen=True)
class PeerRef:
    label: str
    file: str
    keys: tuple[str, ...]


# halfmq case -> the peer figures it is compared with (same workload shape, 256-byte messages)
COMPARISONS: list[tuple[str, str, str, list[PeerRef]]] = [
    ("durable send, 1 in flight", "send", "single_seq", [
        PeerRef("RabbitMQ 3 classic, publisher confirms", "rabbitmq_classic", ("confirm_seq",)),
        PeerRef("NATS JetStream 2.15, sync always", "nats_2_15_syncalways", ("publish_seq",)),
        PeerRef("Redis 7 XADD, appendfsync always", "redis_always", ("xadd_seq",)),
        PeerRef("FastAPI inline fsync (wrk -c1)", "http_append_fsync", ("wrk_t1_c1",)),
        PeerRef("raw append + fsync per record", "fsync", ("fsync_each",)),
    ]),
    ("durable send, 64 in flight", "send", "single_c64", [
        PeerRef("RabbitMQ 3 classic, publisher confirms", "rabbitmq_classic", ("confirm_c64",)),
        PeerRef("NATS JetStream 2.15, sync always", "nats_2_15_syncalways", ("publish_c64",)),
        PeerRef("Redis 7 XADD, appendfsync always", "redis_always", ("xadd_c64",)),
        PeerRef("FastAPI inline fsync (wrk -c64)", "http_append_fsync", ("wrk_t1_c64",)),
        PeerRef("trivial FastAPI, 1 worker (wrk -c64)", "http", ("workers1", "wrk_t1_c64")),
        PeerRef("trivial FastAPI, 1 worker (aiohttp, 64)", "http", ("workers1", "aiohttp_c64")),
    ]),
    ("durable batched send (100/request), 64 in flight, msg/s", "send", "batch100_c64", [
        PeerRef("raw append, fsync per 64 records", "fsync", ("fsync_group64",)),
        PeerRef("RabbitMQ 3 classic, publisher confirms, 64 in flight", "rabbitmq_classic", ("confirm_c64",)),
    ]),
    ("SDK AsyncProducer.send, 64 callers, durable", "send", "sdk_single_c64", [
        PeerRef("Redis 7 XADD, appendfsync always (redis-py asyncio, 64 in flight)", "redis_always", ("xadd_c64",)),
        PeerRef("NATS JetStream 2.15, sync always (nats-py, 64 in flight)", "nats_2_15_syncalways", ("publish_c64",)),
        PeerRef("RabbitMQ 3 classic, publisher confirms (aio-pika, 64 in flight)", "rabbitmq_classic", ("confirm_c64",)),
        PeerRef("one httpx.AsyncClient, 64 in flight, trivial FastAPI", "http", ("workers1", "httpx_c64_pool64")),
        PeerRef("aiohttp, 64 in flight, trivial FastAPI", "http", ("workers1", "aiohttp_c64")),
    ]),
    ("transaction (half + commit), 1 in flight", "tx", "pairs_seq", [
        PeerRef("RabbitMQ AMQP tx, 1 channel", "rabbitmq_classic", ("tx_seq",)),
        PeerRef("PostgreSQL outbox txn, 1 client", "outbox", ("pg_sync_commit_on_c1",)),
        PeerRef("SQLite WAL FULL outbox txn", "outbox", ("sqlite_wal_sync_full",)),
    ]),
    ("transaction (half + commit), 64 in flight", "tx", "pairs_c64", [
        PeerRef("RabbitMQ AMQP tx, 64 channels", "rabbitmq_classic", ("tx_c64",)),
        PeerRef("PostgreSQL outbox txn, 32 clients", "outbox", ("pg_sync_commit_on_c32",)),
    ]),
    ("SDK AsyncTransactionProducer.send_in_transaction, 64 callers", "tx", "sdk_tx_c64", [
        PeerRef("RabbitMQ AMQP tx, 64 channels (aio-pika)", "rabbitmq_classic", ("tx_c64",)),
        PeerRef("PostgreSQL outbox txn, 32 clients (asyncpg)", "outbox", ("pg_sync_commit_on_c32",)),
    ]),
    ("transaction (half + commit), 64 in flight, Python (aiohttp) client", "tx", "pairs_c64_aiohttp", [
        PeerRef("RabbitMQ AMQP tx, 64 channels (aio-pika client)", "rabbitmq_classic", ("tx_c64",)),
    ]),
    ("consume + ack, one consumer, msg/s", "consume", "one_consumer", [
        PeerRef("RabbitMQ consume, prefetch 256, ack each", "rabbitmq_classic", ("consume",)),
        PeerRef("Redis XREADGROUP 256 + XACK", "redis_always", ("consume_group",)),
        PeerRef("NATS JetStream pull 256 + ack", "nats_2_15_syncalways", ("consume_pull_ack",)),
    ]),
    ("SDK AsyncConsumer (receive + handler + ack), one process, msg/s", "consume", "sdk_consumer", [
        PeerRef("NATS JetStream pull 256 + ack (nats-py)", "nats_2_15_syncalways", ("consume_pull_ack",)),
        PeerRef("Redis XREADGROUP 256 + XACK (redis-py asyncio)", "redis_always", ("consume_group",)),
        PeerRef("RabbitMQ consume, prefetch 256, ack each (aio-pika)", "rabbitmq_classic", ("consume",)),
    ]),
    ("consume + ack, four consumers, msg/s", "consume", "four_consumers", [
        PeerRef("RabbitMQ consume, prefetch 256, ack each", "rabbitmq_classic", ("consume",)),
    ]),
    ("orders credited end to end, 64 in flight", "orders", "orders_c64", [
        PeerRef("PostgreSQL outbox txn alone, 32 clients", "outbox", ("pg_sync_commit_on_c32",)),
        PeerRef("SQLite WAL FULL outbox txn alone", "outbox", ("sqlite_wal_sync_full",)),
    ]),
    ("orders credited end to end on PostgreSQL, 64 in flight", "orders", "orders_c64_pg", [
        PeerRef("PostgreSQL outbox txn alone, 32 clients", "outbox", ("pg_sync_commit_on_c32",)),
    ]),
    ("quorum send on a 3-node set (ack=quorum), 64 in flight", "replicated", "quorum_c64", [
        PeerRef("NATS JetStream R3 cluster of 3, sync always (nats-py, 64 in flight)", "nats_jetstream_r3", ("publish_c64",)),
    ]),
    ("Spark job, wall time (s)", "spark", "aggregate", [
        PeerRef("Spark local[2]: start → first action", "spark", ("startup_to_first_action_s",)),
        PeerRef("Spark local[2]: 1M-row groupBy from Parquet", "spark", ("agg_from_parquet_s",)),
    ]),
]


def _n(v: float | None, unit: str = "/s") -> str:
    if v is None:
        return "—"
    if unit == "s":
        return f"{v:.2f} s"
    return f"{v:,.0f}" if v >= 100 else f"{v:,.1f}"


def _gate_target(target: float, unit: str) -> str:
    if unit == "ms":
        return f"≤ {target:,.0f} ms"
    return f"≤ {target:.2f} s" if unit == "s" else f"≥ {target:,.0f}/s"


def _ms(v: float | None) -> str:
    return "—" if v is None else (f"{v:,.1f}" if v >= 10 else f"{v:.2f}")


def _case(doc: dict[str, Any], scenario: str, case: str) -> dict[str, Any] | None:
    sc = doc["scenarios"].get(scenario)
    return sc["cases"].get(case) if sc else None


def _case_figure(case: dict[str, Any]) -> tuple[str, str, str, str]:
    """(median, min–max, p50, p99) as text."""
    if "ops_per_s" in case:
        s = case["ops_per_s"]
        return _n(s["median"]), f"{_n(s['min'])}–{_n(s['max'])}", _ms(case.get("p50_ms")), _ms(case.get("p99_ms"))
    s = case["seconds"]
    return _n(s["median"], "s"), f"{s['min']:.2f}–{s['max']:.2f}", "—", "—"


def _peer_text(fig: Figure | None) -> str:
    if fig is None:
        return "not measured"
    if fig.unit == "s":
        return f"{fig.median:.2f} s"
    rng = f" ({_n(fig.low)}–{_n(fig.high)})" if fig.low is not None and fig.high is not None else ""
    return f"{_n(fig.median)}{rng}"


def _ratio(halfmq: float | None, fig: Figure | None, timed: bool) -> str:
    if halfmq is None or fig is None or not fig.median:
        return "—"
    return f"{halfmq / fig.median:.2f}×" + (" (time)" if timed else "")


def render(doc: dict[str, Any], peers: dict[str, Any], *, bench_json: Path, peers_dir: Path,
           out: Path) -> str:
    lines: list[str] = []
    w = lines.append
    _title(w, doc, peers, bench_json=bench_json, peers_dir=peers_dir, out=out)
    _machine(w, doc["machine"], doc["versions"])
    _commands(w, doc, peers, bench_json=bench_json, peers_dir=peers_dir, out=out)
    _gates(w, gate_rules.evaluate(doc, peers))
    _side_by_side(w, doc, peers)
    _every_case(w, doc)
    _baselines(w, doc)
    _peers(w, peers, peers_dir)
    return "\n".join(lines) + "\n"


def _title(w: Callable[[str], None], doc: dict[str, Any], peers: dict[str, Any], *, bench_json: Path, peers_dir: Path, out: Path) -> None:
    """The heading, where the figures come from, and how to read them."""
    s = doc["settings"]
    w("# Benchmarks")
    w("")
    w(
        f"<!-- generated by `python -m halfmq.bench.report {bench_json} --peers {peers_dir} --out {out} "
        "--notes docs/bench/notes.md --footprint docs/bench/footprint.json`; "
        "edit the notes, not this page -->"
    )
    w("")
    written = peer_results.written(peers_dir)
    missing = f"no results in {peers_dir} yet (run `halfmq bench peers --out {peers_dir}`, then re-render)"
    when = f", written {written[0]} → {written[1]} UTC" if written else ""
    w(
        f"halfmq measured {doc['started_at']} → {doc.get('finished_at', '?')} (UTC); page rendered "
        f"{datetime.now(UTC).isoformat(timespec='seconds')}. Peers: "
        f"{'results from ' + str(peers_dir) + ' (' + ', '.join(sorted(peers)) + when + ')' if peers else missing}."
    )
    if s.get("quick"):
        w("")
        w("**This is a `--quick` run: 1 run of ~1 s per case and small sizes. It is a smoke run, not a measurement.**")
    w("")
    w(
        "Compare only figures taken in the same session on the same machine; read the ratios, not the absolute "
        "numbers (the machines are shared and noisy)."
    )
    w("")


def _machine(w: Callable[[str], None], m: dict[str, Any], v: dict[str, Any]) -> None:
    w("## Machine")
    w("")
    w("| | |")
    w("|---|---|")
    w(f"| CPU | {m['cpu_model']}, {m['cores']} cores |")
    w(f"| memory | {m['memory_gib']} GiB |")
    w(f"| kernel | {m['kernel']} ({m['os']}) |")
    w(f"| Python | {m['python']} ({m['python_implementation']}) |")
    w(f"| halfmq | {v.get('halfmq')} at commit `{(v.get('git_commit') or '?')[:12]}` |")
    w(
        "| HTTP stack | "
        + ", ".join(
            f"{k} {v[k]}"
            for k in ("granian", "fastapi", "starlette", "pydantic", "uvicorn", "uvloop", "httptools")
            if v.get(k)
        )
        + " |"
    )
    w(
        "| load | "
        + ", ".join(f"{k} {v[k]}" for k in ("aiohttp", "httpx", "orjson") if v.get(k))
        + (f"; {v['wrk']}" if v.get("wrk") else "")
        + " |"
    )
    if v.get("pyspark"):
        w(f"| Spark | pyspark {v['pyspark']} |")
    w("")


def _commands(w: Callable[[str], None], doc: dict[str, Any], peers: dict[str, Any], *, bench_json: Path, peers_dir: Path, out: Path) -> None:
    """The commands that produce this page, and the settings of the run."""
    s = doc["settings"]
    commands = peer_results.commands(peers_dir)
    w("## Commands")
    w("")
    w("```")
    w(f"{doc.get('command') or 'halfmq bench'}        # halfmq (this page's numbers)")
    w(f"halfmq bench peers --out {peers_dir}        # the peers below, one after the other (as root once: --setup)")
    for name, cmd in commands.items():
        mark = "" if name in peers else "   # (no result yet)"
        w(f"{cmd}   # peer: {name}{mark}")
    w("halfmq bench footprint --json docs/bench/footprint.json        # the SDK's install and import footprint")
    w(
        f"python -m halfmq.bench.report {bench_json} --peers {peers_dir} --out {out} --notes docs/bench/notes.md --footprint docs/bench/footprint.json"
    )
    w("```")
    w("")
    w(
        f"Settings: {s['runs']} measured run(s) per case of {s['seconds']:g} s each after a {s['warmup']:g} s warm-up, "
        f"{s['concurrency']} in flight, {s['body_bytes']}-byte bodies, driver `{s['driver']}` (aiohttp: one ClientSession, "
        "connector limit = concurrency, N coroutines looping request → latency until the deadline or the count bound, on uvloop, "
        "in the bench process; every server is a separate process on 127.0.0.1). Durable means `flush_mode=sync`: "
        "a send is answered after fsync (group commit). Medians over runs; p50/p99 are the medians of each run's percentiles."
    )
    w("")


def _gates(w: Callable[[str], None], gates: list[dict[str, Any]]) -> None:
    w("## Gates")
    w("")
    w("| gate | halfmq | target | status |")
    w("|---|---|---|---|")
    for g in gates:
        unit = g["unit"]
        target = "—" if g["target"] is None else _gate_target(g["target"], unit)
        ref = f" = {g['reference']}" if g["reference"] else ""
        status = {"met": "**met**", "missed": "**missed**"}.get(g["status"], g["status"])
        measured = _ms(g["measured"]) + " ms" if unit == "ms" and g["measured"] is not None else _n(g["measured"], unit)
        w(f"| {g['text']} | {measured} | {target}{ref} | {status} |")
    w("")
    w(
        "`unknown`: a figure is missing (the scenario or the peer was not run); `n/a`: a quick run, whose sizes are not the gate's."
    )
    w("")


def _side_by_side(w: Callable[[str], None], doc: dict[str, Any], peers: dict[str, Any]) -> None:
    w("## halfmq side by side with the peers")
    w("")
    w("| workload | halfmq | peer | peer figure | halfmq / peer |")
    w("|---|---|---|---|---|")
    for title, scenario, case_name, refs in COMPARISONS:
        case = _case(doc, scenario, case_name)
        timed = bool(case and "seconds" in case)
        med = (
            None
            if case is None
            else (case["ops_per_s"]["median"] if "ops_per_s" in case else case["seconds"]["median"])
        )
        htext = "not run" if case is None else _n(med, "s" if timed else "/s")
        for i, ref in enumerate(refs):
            fig = peer_results.figure(peers, ref.file, *ref.keys)
            w(
                f"| {title if i == 0 else ''} | {htext if i == 0 else ''} | {ref.label} | {_peer_text(fig)} | {_ratio(med, fig, timed)} |"
            )
    w("")
    w(
        "For the Spark row a ratio below 1 is better (it is a time); the peer rows are Spark's own floor "
        "(JVM start, a bare groupBy), not a competing product."
    )
    w("")


def _every_case(w: Callable[[str], None], doc: dict[str, Any]) -> None:
    s = doc["settings"]
    w("## Every halfmq case")
    w("")
    w("| scenario | case | unit | median | min–max | p50 ms | p99 ms | vs in-run baseline |")
    w("|---|---|---|---|---|---|---|---|")
    for name, sc in doc["scenarios"].items():
        if sc["status"] != "ok":
            w(
                f"| {name} | *{sc['status']}* | | | | | | {sc.get('reason', '').splitlines()[0][:120] if sc.get('reason') else ''} |"
            )
        for case_name, case in sc["cases"].items():
            med, rng, p50, p99 = _case_figure(case)
            ratio = f"{case['ratio']:.2f}× `{case['baseline']}`" if case.get("ratio") is not None else "—"
            errors = f" ({case['errors']} errors)" if case.get("errors") else ""
            w(f"| {name} | {case_name}{errors} | {case['unit']} | {med} | {rng} | {p50} | {p99} | {ratio} |")
            cb = case.get("check_back")
            if cb:
                w(
                    f"| | ↳ never ended ({s.get('tx_mix_unended', 0.05):.0%}): half send → commit by check-back | ms | | max {_ms(cb.get('max_ms'))} | "
                    f"{_ms(cb.get('p50_ms'))} | {_ms(cb.get('p99_ms'))} | {cb['committed_by_check']}/{cb['never_ended']} committed "
                    f"(timeout {cb['transaction_timeout_s']:g} s, scan every {cb['check_interval_s']:g} s) |"
                )
    w("")
    for name, sc in doc["scenarios"].items():
        for case_name, case in sc["cases"].items():
            w(f"- `{name}/{case_name}`: {case.get('what', '')}")
    w("")


def _baselines(w: Callable[[str], None], doc: dict[str, Any]) -> None:
    if doc.get("baselines"):
        w("## In-run baselines (same run, same driver, no broker)")
        w("")
        w("| baseline | what | median | min–max | p50 ms | p99 ms |")
        w("|---|---|---|---|---|---|")
        for name, case in doc["baselines"].items():
            med, rng, p50, p99 = _case_figure(case)
            w(f"| {name} | {case['what']} | {med} {case['unit']} | {rng} | {p50} | {p99} |")
        w("")


def _peers(w: Callable[[str], None], peers: dict[str, Any], peers_dir: Path) -> None:
    w("## Peers (as measured by `halfmq bench peers`, each through its own Python client)")
    w("")
    if not peers:
        w(f"No peer results in `{peers_dir}` when this page was rendered.")
    else:
        w("| result | case | median | min–max | p50 ms | p99 ms |")
        w("|---|---|---|---|---|---|")
        for file, data in peers.items():
            if "error" in data and len(data) == 1:
                w(f"| {file} | {data['error']} | | | | |")
                continue
            for _key, path, fig in _peer_rows(data):
                w(
                    f"| {file} | {path} | {_n(fig.median, fig.unit)} | "
                    f"{_n(fig.low, fig.unit) if fig.low is not None else ''}–{_n(fig.high, fig.unit) if fig.high is not None else ''} | "
                    f"{_ms(fig.p50_ms) if fig.p50_ms is not None else ''} | {_ms(fig.p99_ms) if fig.p99_ms is not None else ''} |"
                )
    w("")



def _peer_rows(data: dict[str, Any]):
    for key, value in data.items():
        if not isinstance(value, dict):
            continue
        fig = peer_results.figure({"x": data}, "x", key)
        if fig is not None:
            yield key, key, fig
            continue
        for key2, value2 in value.items():
            fig = peer_results.figure({"x": data}, "x", key, key2) if isinstance(value2, dict) else None
            if fig is not None:
                yield key, f"{key}/{key2}", fig


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m halfmq.bench.report", description=__doc__.splitlines()[0])
    parser.add_argument("bench_json", type=Path, help="a `halfmq bench --json` result")
    parser.add_argument("--peers", type=Path, default=peer_results.DEFAULT_RESULTS, help="the peers' results directory")
    parser.add_argument(
        "--out", type=Path, default=DOCS, help="markdown file to write (default docs/benchmarks.md; - for stdout)"
    )
    parser.add_argument(
        "--notes", type=Path, help="hand-written markdown (profiles, what was tried) appended to the page"
    )
    parser.add_argument(
        "--footprint", type=Path, help="a `halfmq bench footprint --json` result, rendered before the notes"
    )
    args = parser.parse_args(argv)
    doc = load(args.bench_json)
    peers = peer_results.load(args.peers)
    text = render(
        doc, peers, bench_json=args.bench_json, peers_dir=args.peers, out=args.out
    )
    if args.footprint is not None:
        text += "\n".join(footprint.render(json.loads(args.footprint.read_text()))) + "\n"
    if args.notes is not None:
        text += f"\n<!-- from {args.notes} -->\n\n" + args.notes.read_text()
    if str(args.out) == "-":
        sys.stdout.write(text)
    else:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
