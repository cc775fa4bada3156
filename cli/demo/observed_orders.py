"""What the demo reads back to judge the order guarantees: each user's messages in send order and in the credit
service's apply order, and each order's payment as the order service recorded it (split from driver.py, which places
and pays; this only observes)."""

from __future__ import annotations

import time
from decimal import Decimal

import httpx
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from halfmq.services.order_events import KIND, OrderEvent

from .driver import DemoDriver
from .guarantees import Entry


def sent_sequences(driver: DemoDriver) -> dict[str, list[Entry]]:
    """Per user, the messages on ORDER_TOPIC in queue order: the order sent (a user's message group keeps one queue)."""
    sent: dict[str, list[Entry]] = {}
    for body in driver.order_topic_bodies():
        sent.setdefault(body["user_id"], []).append((body["order_id"], body.get(KIND, OrderEvent.ORDER.value)))
    return sent


def applied_sequences(driver: DemoDriver) -> dict[str, list[Entry]]:
    """Per user, the credit service's ledger in the order it applied the messages (``seq``)."""
    applied: dict[str, list[Entry]] = {}
    with httpx.Client(timeout=30) as client:
        for user in driver.all_users:
            after: int | None = 0
            while after is not None:
                page = client.get(f"{driver.t.credit_url}/users/{user}/ledger", params={"after_seq": after, "limit": 1000}).json()
                applied.setdefault(user, []).extend((e["order_id"], e["kind"]) for e in page["entries"])
                after = page["next_after_seq"]
    return {user: entries for user, entries in applied.items() if entries}


def payment_rows(driver: DemoDriver, released: dict[str, int] | None = None
                 ) -> tuple[dict[str, tuple[str, int | None, int | None]], float | None]:
    """Each order's (status, payment due ms, payment-due message first seen ms), and the service's payment delay;
    when the broker released each message (its store time, ms) into ``released``."""
    rows: dict[str, tuple[str, int | None, int | None]] = {}
    delay = None
    with httpx.Client(timeout=30) as client:
        for user in driver.all_users:
            offset: int | None = 0
            while offset is not None:
                page = client.get(f"{driver.t.order_url}/payments", params={"user_id": user, "limit": 500, "offset": offset}).json()
                delay = page.get("payment_due_seconds", delay)
                for p in page["payments"]:
                    rows[p["order_id"]] = (p["status"], p["payment_due_ms"], p["payment_due_seen_ms"])
                    if released is not None and p.get("payment_due_released_ms") is not None:
                        released[p["order_id"]] = p["payment_due_released_ms"]
                offset = page["next_offset"]
    return rows, delay

def wait_payments_due(driver: DemoDriver, orders: dict[str, tuple[str, Decimal]], timeout: float = 180,
                      released: dict[str, int] | None = None) -> dict[str, tuple[str, int | None, int | None]] | None:
    """Once every committed order's payment-due message has arrived: the payment rows of those orders (and into
    ``released`` when the broker released each).

    None when the service's payments fall due later than ``timeout`` (a stack not started by the demo):
    there is nothing to check yet.
    """
    rows, delay = payment_rows(driver, released)
    if delay is None or delay > timeout:
        driver.console.print(f"[yellow]payments fall due after {delay} s: their checks are skipped[/]")
        return None
    columns = (TextColumn("waiting for payments to fall due"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    deadline = time.monotonic() + delay + timeout
    with Progress(*columns, console=driver.console) as progress:
        task = progress.add_task("payments", total=len(orders))
        while True:
            seen = sum(1 for oid in orders if rows.get(oid, ("", None, None))[2] is not None)
            progress.update(task, completed=seen)
            if seen >= len(orders) or time.monotonic() > deadline:
                return {oid: rows.get(oid, ("missing", None, None)) for oid in orders}
            time.sleep(1)
            rows, _ = payment_rows(driver, released)
