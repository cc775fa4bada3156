"""The synthetic data: orders with one credit each, the injected problems, the balances they add up to.

Every generated order gets exactly one credit (points = whole units of the amount), and every user's
balance equals their ledger points, except for what is injected on purpose: ``missing_credits`` extra
orders without a credit, ``orphan_credits`` extra credits without an order, and ``wrong_balances``
users whose balance is off by a few points. The data is deterministic for a given seed.
"""

from __future__ import annotations

import random
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from .writers import writer_for

DEFAULT_START = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass
class Generated:
    orders: int
    credits: int
    users: int
    points: int
    missing_credits: list[str] = field(default_factory=list)  # orders written without a credit
    orphan_credits: list[str] = field(default_factory=list)  # credits written without an order
    wrong_balances: dict[str, int] = field(default_factory=dict)  # user → how far the balance is off
    seconds: float = 0.0


def _rows(n: int, rng: random.Random, users: list[str], start: datetime, span: timedelta, points_per_unit: int,
          batch: int) -> Iterator[tuple[list[tuple], list[tuple]]]:
    """Batches of (orders, credits): order i is placed at an evenly spread time, credited a moment later.

    Rows are ``(order_id, user_id, cents, created_at)`` and ``(order_id, user_id, cents, points, message_id,
    created_at)`` with naive UTC datetimes; the writers turn them into what each database wants.
    """
    step = span / max(n, 1)
    base = start.astimezone(UTC).replace(tzinfo=None)
    bits, pick, n_users = rng.getrandbits, rng.randrange, len(users)
    orders: list[tuple] = []
    credits: list[tuple] = []
    for i in range(n):
        order_id = f"{bits(128):032x}"
        user = users[pick(n_users)]
        cents = pick(100, 50_000)
        placed = base + step * i
        orders.append((order_id, user, cents, placed))
        credits.append((order_id, user, cents, (cents // 100) * points_per_unit, "m" + order_id[:24],
                        placed + timedelta(microseconds=pick(5_000, 500_000))))
        if len(orders) >= batch:
            yield orders, credits
            orders, credits = [], []
    if orders:
        yield orders, credits


Rows = Iterator[tuple[list[tuple], list[tuple]]]


def _reset(cw: Any, ow: Any) -> None:
    for table in ("summary_current", "summary_users", "summary_days", "summary_runs", "credit_accounts", "credit_records"):
        cw.execute(f"DELETE FROM {table}")
    for table in ("idempotency_keys", "halfmq_transaction_records", "orders"):
        ow.execute(f"DELETE FROM {table}")


def _write_side_by_side(pool: ThreadPoolExecutor, cw: Any, ow: Any, rows: Rows, balances: dict[str, int], out: Generated,
                        progress_of: int | None) -> None:
    """Each batch's orders on the pool's thread while its credits are written here: the drivers release the GIL
    while the database works. ``progress_of``: the total to count up to on stderr."""
    pending = None
    for orders, creds in rows:
        if pending is not None:
            pending.result()
        pending = pool.submit(ow.orders, orders)
        cw.credits(creds)
        for c in creds:
            balances[c[1]] += c[3]
        out.orders += len(orders)
        out.credits += len(creds)
        if progress_of is not None:
            print(f"\r  {out.credits:,}/{progress_of:,} credits", end="", file=sys.stderr, flush=True)
    if pending is not None:
        pending.result()
    if progress_of is not None:
        print(file=sys.stderr)


def _write_injected(cw: Any, ow: Any, missing: Rows, orphans: Rows, balances: dict[str, int], out: Generated) -> None:
    """The orders of ``missing`` without their credits, the credits of ``orphans`` without their orders."""
    extra_orders: list[tuple] = []
    extra_credits: list[tuple] = []
    for orders, _ in missing:
        extra_orders += orders
    for _, creds in orphans:
        extra_credits += creds
    if extra_orders:
        ow.orders(extra_orders)
    if extra_credits:
        cw.credits(extra_credits)
        for c in extra_credits:
            balances[c[1]] += c[3]
    out.orders += len(extra_orders)
    out.credits += len(extra_credits)
    out.missing_credits = sorted(o[0] for o in extra_orders)
    out.orphan_credits = sorted(c[0] for c in extra_credits)


def generate(credit_url: str, order_url: str, credits: int, *, users: int | None = None, days: int = 30,
             start: datetime = DEFAULT_START, seed: int = 42, missing_credits: int = 0, orphan_credits: int = 0,
             wrong_balances: int = 0, points_per_unit: int = 1, batch: int = 50_000, reset: bool = False,
             progress: bool = False) -> Generated:
    """Write ``credits`` orders with one credit each (plus the injected problems); both databases commit at the end."""
    started = time.perf_counter()
    rng = random.Random(seed)
    n_users = users or max(1, credits // 100)
    user_ids = [f"user-{k:07d}" for k in range(n_users)]
    span = timedelta(days=days)
    cw, ow = writer_for(credit_url), writer_for(order_url)
    pool = ThreadPoolExecutor(1, thread_name_prefix="orders-writer")
    out = Generated(orders=0, credits=0, users=0, points=0)
    balances: dict[str, int] = defaultdict(int)
    try:
        if reset:
            _reset(cw, ow)
        _write_side_by_side(pool, cw, ow, _rows(credits, rng, user_ids, start, span, points_per_unit, batch), balances, out,
                            credits if progress else None)
        # orders that never got their credit, then credits whose order does not exist (they count in the ledger,
        # so in the balances too): drawn in this order from the one seeded generator
        _write_injected(cw, ow, _rows(missing_credits, rng, user_ids, start, span, points_per_unit, batch),
                        _rows(orphan_credits, rng, user_ids, start, span, points_per_unit, batch), balances, out)
        for user in sorted(balances)[:wrong_balances]:
            out.wrong_balances[user] = 7
        now = (start + span).astimezone(UTC).replace(tzinfo=None)
        cw.accounts([(u, b + out.wrong_balances.get(u, 0), now) for u, b in sorted(balances.items())])
        out.users = len(balances)
        out.points = sum(balances.values())
        ow.commit()
        cw.commit()
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        for w in (ow, cw):
            try:
                w.rollback()
            except Exception:  # noqa: BLE001
                pass
        raise
    pool.shutdown()
    out.seconds = time.perf_counter() - started
    return out
