"""`longlife`: what a broker that has lived costs: disk by kind, RSS, and restart time after kill -9 and after SIGTERM,
at each size of history (issue 44).

Per size N (``--longlife-sizes``; default 100k, 300k, 1M; --quick 5k), a fresh data dir is filled before any broker
runs, through the broker's own store and coordinator (as ``bench.fill`` does for plain messages: HTTP would take
longer than what it prepares): a third of N as plain batched sends, a third as idempotent sends (the SDK's default:
one numbered request per message, over 8 producer ids), a third in committed producer transactions of 10 messages
(16 transactional ids), and acks of half of the plain messages by a consumer group (32 per ack request). A broker
then starts on it (the first start replays whatever the fill left), gets 1 % of N timers due in a day over HTTP,
and is left ``snapshot_wait`` seconds (a state snapshot is taken every second here). Then: RSS, disk by kind,
``kill -9`` and a start timed from ``Popen`` to the first 200 of ``/healthz``; then SIGTERM and a start, timed the same.
What the replay read is taken from the broker's log when it says (``records read after the state snapshot's entry``).

``--soak SECONDS`` adds the soak: one broker with a retention of ``SOAK_RETENTION_S`` seconds (segments of 4 MiB,
checked twice a second) gets the SDK's numbered batch sends for that long, its disk and RSS sampled once a retention
period; then its restart after kill -9 and after SIGTERM. Flat means the last periods' disk is no larger than the
first full period's (``disk_growth``: the second half's largest sample over the first half's largest).

``--broker-python`` runs the broker under test with another interpreter (another checkout's ``.venv/bin/python``),
so the same fill can be measured before and after a change. The page cache is warm: a process crash, not a reboot.
"""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path
from typing import Any

from .. import probe
from ..context import Context
from ..results import scenario_ok, timed_case
from ..servers import BrokerServer

PLAIN, IDEMPOTENT, TRANSACTIONAL, IN_A_DAY = "LL_PLAIN", "LL_IDEMPOTENT", "LL_TXN", "LL_TIMERS"
GROUP = "ll_group"
QUEUES = 4
PRODUCERS = 8
TRANSACTIONAL_IDS = 16
PER_TRANSACTION = 10
ACKS_PER_REQUEST = 32
REPLAYED = re.compile(r"(\d+) records read after the state snapshot's entry (\d+)")
ENV = {"HALFMQ_BROKER_LOG_LEVEL": "info", "HALFMQ_BROKER_STATE_SNAPSHOT_INTERVAL": "1"}
SOAK_TOPIC = "LL_SOAK"
SOAK_RETENTION_S = 3
SOAK_ENV = {**ENV, "HALFMQ_BROKER_RETENTION": f"{SOAK_RETENTION_S}s", "HALFMQ_BROKER_RETENTION_CHECK_INTERVAL": "0.5",
            "HALFMQ_BROKER_SEGMENT_BYTES": str(4 << 20)}
SOAK_BATCH = 100


def baselines(driver: str) -> list[str]:
    return []


async def _nothing(end: int) -> None:
    return None


def fill_history(data: Path, messages: int, body_size: int) -> dict[str, Any]:
    """Write ``messages`` (plain, idempotent, transactional) and the acks of half the plain ones, as a broker would."""
    from halfmq.broker.delivery.delivery_service import DeliveryPolicy, DeliveryService
    from halfmq.broker.delivery.receipt_handle import load_or_create_key
    from halfmq.broker.idempotence.producer_ids import SentRef
    from halfmq.broker.idempotence.producer_records import SendKind
    from halfmq.broker.producer_transactions.coordinator import TransactionCoordinator
    from halfmq.broker.store.message_store import MessageStore, PutItem, StoreConfig
    from halfmq.broker.store.state_records import acks_record

    started = time.perf_counter()
    body = (b"halfmq-longlife:" + b"x" * body_size)[:body_size]
    store = MessageStore(StoreConfig(data_dir=data, flush_mode="async"))
    try:
        store.log_topics()
        delivery = DeliveryService(store, DeliveryPolicy(), key=load_or_create_key(data / "receipt-key.json"))
        coordinator = TransactionCoordinator(store, delivery, _nothing)
        ids = coordinator.ids
        for topic in (PLAIN, IDEMPOTENT, TRANSACTIONAL):
            store.create_topic(topic, QUEUES)
        third = messages // 3
        for start in range(0, third, 1000):
            store.put([PutItem(PLAIN, (start + i) % QUEUES, body) for i in range(min(1000, third - start))])
        for start in range(0, third // 2, ACKS_PER_REQUEST):  # half of the plain ones acked, request by request
            rows = [(GROUP, PLAIN, o % QUEUES, o // QUEUES) for o in range(start, min(third // 2, start + ACKS_PER_REQUEST))]
            store.put([acks_record(rows)])
        producers = [asyncio.run(ids.new_producer_id("bench")) for _ in range(PRODUCERS)]
        for n in range(third):
            ref = producers[n % PRODUCERS]
            producer = ids.sender(ref.producer_id, ref.epoch, "bench")
            item = PutItem(IDEMPOTENT, n % QUEUES, body, {"UNIQ_KEY": f"ll-{n}"})
            results, _ = store.put([item, ids.send_record(producer, n // PRODUCERS, [item])])
            ids.sent(producer, n // PRODUCERS, SentRef(SendKind.MESSAGES, results[0].commit_log_offset, 1))
        fenced = {}
        for t in range(TRANSACTIONAL_IDS):
            answer = asyncio.run(coordinator.init(f"ll-tx-{t}", None, "bench"))
            fenced[answer.transactional_id] = (answer.producer_id, answer.epoch)
        for n in range(third // PER_TRANSACTION):
            tid = f"ll-tx-{n % TRANSACTIONAL_IDS}"
            pid, epoch = fenced[tid]
            coordinator.begin(tid, pid, epoch, 0)
            coordinator.add_messages(tid, pid, epoch, 1, [PutItem(TRANSACTIONAL, i % QUEUES, body) for i in range(PER_TRANSACTION)], [])
            asyncio.run(coordinator.commit(tid, pid, epoch))
        store.checkpoint()
        return {"messages": 3 * third, "state_records": store.reads.queue_range("HALFMQ_TXN_STATE", 0)[1],
                "fill_seconds": round(time.perf_counter() - started, 1)}
    finally:
        store.close()


def _timers(url: str, count: int) -> None:
    for start in range(0, count, 100):
        probe.call("POST", f"{url}/v1/topics/{IN_A_DAY}/messages",
                   {"messages": [{"body": f"due in a day {start + i}", "delay_ms": 86_400_000} for i in range(min(100, count - start))]})


def disk_by_kind(data: Path) -> dict[str, int]:
    """Bytes under each top-level entry of the data dir (commitlog, consumequeue, index, timers, …); files as "files"."""
    out: dict[str, int] = {}
    for entry in sorted(data.iterdir()):
        kind = entry.name if entry.is_dir() else "files"
        size = sum(p.stat().st_size for p in entry.rglob("*") if p.is_file()) if entry.is_dir() else entry.stat().st_size
        out[kind] = out.get(kind, 0) + size
    return out


def rss_mib(pid: int | None) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as fh:
            return next(round(int(line.split()[1]) / 1024, 1) for line in fh if line.startswith("VmRSS:"))
    except (OSError, StopIteration, TypeError):
        return None


def _replayed(broker: BrokerServer) -> dict[str, int] | None:
    found = REPLAYED.findall(broker.tail(400))
    return {"records_read": int(found[-1][0]), "snapshot_entry": int(found[-1][1])} if found else None


def _broker(data: Path, ctx: Context, port: int | None = None, env: dict[str, str] = ENV) -> BrokerServer:
    broker = BrokerServer(data, ctx.logs, env=env, port=port)
    if ctx.settings.broker_python:  # `--broker-python`: another checkout's interpreter
        broker.argv = [ctx.settings.broker_python, *broker.argv[1:]]
    return broker


def _one_size(ctx: Context, messages: int) -> dict[str, Any]:
    data = ctx.dir("longlife", f"n{messages}")
    filled = fill_history(data, messages, ctx.settings.body_bytes)
    ctx.note(f"longlife {messages:,}: filled in {filled['fill_seconds']} s ({filled['state_records']:,} state records)")
    broker = _broker(data, ctx)
    out: dict[str, Any] = {"fill": filled}
    try:
        broker.start(timeout=900, poll=0.02)
        out["first_start_s"], out["first_start_replay"] = round(broker.healthy_after, 3), _replayed(broker)
        probe.call("POST", f"{broker.url}/v1/topics", {"name": IN_A_DAY, "queues": QUEUES})
        _timers(broker.url, max(1, messages // 100))
        time.sleep(ctx.settings.longlife_snapshot_wait)
        out["rss_mib"], out["disk_bytes"] = rss_mib(broker.pid), disk_by_kind(data)
        broker.kill9()
        broker = _broker(data, ctx, port=broker.port)
        broker.start(timeout=900, poll=0.02)
        out["kill9_restart_s"], out["kill9_replay"] = round(broker.healthy_after, 3), _replayed(broker)
        out["rss_after_restart_mib"] = rss_mib(broker.pid)
        time.sleep(ctx.settings.longlife_snapshot_wait)
        broker.stop()
        broker = _broker(data, ctx, port=broker.port)
        broker.start(timeout=900, poll=0.02)
        out["sigterm_restart_s"], out["sigterm_replay"] = round(broker.healthy_after, 3), _replayed(broker)
    finally:
        broker.stop()
    ctx.note(f"longlife {messages:,}: RSS {out['rss_mib']} MiB, restart after kill -9 {out['kill9_restart_s']} s "
             f"({out['kill9_replay']}), after SIGTERM {out['sigterm_restart_s']} s; disk {out['disk_bytes']}")
    return out


def disk_growth(disk_bytes: list[int]) -> float | None:
    """The largest of the second half's samples over the largest of the first half's, leaving out the first sample
    (taken before any send): 1.0 is flat, 2.0 doubled; None with too few samples to say."""
    samples = disk_bytes[1:]
    half = len(samples) // 2
    if half < 2 or max(samples[:half]) <= 0:
        return None
    return round(max(samples[half:]) / max(samples[:half]), 2)


async def _soak_sends(url: str, seconds: float, body: str, sample: Any) -> int:
    """The SDK's numbered batch sends for ``seconds``; ``sample()`` once a retention period. Messages sent."""
    from halfmq.client import AsyncProducer

    sent, next_sample, end = 0, time.monotonic(), time.monotonic() + seconds
    async with AsyncProducer(url) as producer:
        while (now := time.monotonic()) < end:
            if now >= next_sample:
                sample()
                next_sample = now + SOAK_RETENTION_S
            sent += len(await producer.send_batch(SOAK_TOPIC, [body] * SOAK_BATCH))
    return sent


def _soak(ctx: Context, seconds: float) -> dict[str, Any]:
    data = ctx.dir("longlife", "soak")
    broker = _broker(data, ctx, env=SOAK_ENV)
    samples: list[dict[str, Any]] = []
    started = time.monotonic()

    def sample() -> None:
        kinds = disk_by_kind(data)
        samples.append({"at_s": round(time.monotonic() - started, 1), "disk_bytes": sum(kinds.values()), "by_kind": kinds,
                        "rss_mib": rss_mib(broker.pid)})

    out: dict[str, Any] = {"retention_s": SOAK_RETENTION_S, "soak_seconds": seconds}
    try:
        broker.start(timeout=120, poll=0.02)
        probe.create_topic(broker.url, SOAK_TOPIC, QUEUES)
        out["sent"] = asyncio.run(_soak_sends(broker.url, seconds, "x" * ctx.settings.body_bytes, sample))
        sample()
        out.update(samples=samples, periods=round(seconds / SOAK_RETENTION_S, 1),
                   disk_growth=disk_growth([s["disk_bytes"] for s in samples]))
        broker.kill9()
        broker = _broker(data, ctx, port=broker.port, env=SOAK_ENV)
        broker.start(timeout=120, poll=0.02)
        out["kill9_restart_s"] = round(broker.healthy_after, 3)
        broker.stop()
        broker = _broker(data, ctx, port=broker.port, env=SOAK_ENV)
        broker.start(timeout=120, poll=0.02)
        out["sigterm_restart_s"] = round(broker.healthy_after, 3)
    finally:
        broker.stop()
    ctx.note(f"longlife soak: {out.get('sent', 0):,} messages over {seconds:g} s ({out.get('periods')} retention periods): disk "
             f"{[round(s['disk_bytes'] / 2**20, 1) for s in samples]} MiB (growth {out.get('disk_growth')}), restart after "
             f"kill -9 {out.get('kill9_restart_s')} s, after SIGTERM {out.get('sigterm_restart_s')} s")
    return out


def run(ctx: Context) -> dict[str, Any]:
    cases = ctx.cases()
    if ctx.settings.soak_seconds:
        soak = _soak(ctx, ctx.settings.soak_seconds)
        growth = soak.get("disk_growth")
        cases["soak_disk_growth"] = {"what": f"disk in a {soak['soak_seconds']:g} s soak's second half over its first half "
                                             f"(retention {SOAK_RETENTION_S} s; 1.0 is flat)", "unit": "ratio",
                                     "figures": {"median": growth, "min": growth, "max": growth},
                                     **{k: v for k, v in soak.items() if k != "samples"}}
    sizes = {}
    for messages in ctx.settings.longlife_sizes:
        size = _one_size(ctx, messages)
        sizes[str(messages)] = size
        cases[f"kill9_restart_{messages}"] = timed_case(
            [{"seconds": size["kill9_restart_s"]}], what=f"kill -9 after {messages:,} messages, then start → /healthz 200",
            replay=size["kill9_replay"], rss_mib=size["rss_mib"])
        cases[f"sigterm_restart_{messages}"] = timed_case(
            [{"seconds": size["sigterm_restart_s"]}], what=f"SIGTERM after {messages:,} messages, then start → /healthz 200",
            replay=size["sigterm_replay"])
    return scenario_ok(cases, sizes=sizes, broker_python=ctx.settings.broker_python, page_cache="warm",
                       soak=soak if ctx.settings.soak_seconds else None)
