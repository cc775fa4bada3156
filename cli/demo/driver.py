"""Drives real orders through a running halfmq (I/O only; what to conclude is in guarantees.py)."""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Collection
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import httpx
import orjson
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from halfmq.client import Producer
from halfmq.services.order_events import KIND, OrderEvent

from ..up_command import Topology


@dataclass
class Placement:
    outcomes: Counter[str] = field(default_factory=Counter)
    retries: int = 0
    broker_kills: int = 0
    failovers: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Payments:
    """What the driver did about each order's payment, right after placing it."""

    paid: set[str] = field(default_factory=set)  # the order service accepted the payment
    refused: set[str] = field(default_factory=set)  # 409 ORDER_CANCELLED: its payment had already fallen due
    unknown: set[str] = field(default_factory=set)  # no answer: either may have happened


def pays(order_id: str) -> bool:
    """Whether the demo pays this order: 9 in 10, chosen by its id (a uuid's hex), so the choice needs no shared state."""
    return int(order_id[:8], 16) % 10 != 0


def new_leader(views: list[dict[str, Any]], killed: str, term: int) -> tuple[str, int] | None:
    """The node that leads after ``killed`` lost its lease in ``term``: one that says it leads a later term, else None."""
    for view in views:
        if view.get("role") == "leader" and view.get("node_id") != killed and int(view.get("term") or 0) > term:
            return str(view["node_id"]), int(view["term"])
    return None


class DemoDriver:
    def __init__(self, topology: Topology, *, orders: int, users: int, concurrency: int, seed: int,
                 kill_broker: Callable[[str], int | None] | None, console: Console) -> None:
        """``kill_broker(url)`` kill -9s the broker at ``url`` if the demo started it (its pid, or None); None: no chaos."""
        self.t = topology
        self.orders = orders
        self.users = [f"demo{uuid.uuid4().hex[:4]}-u{i}" for i in range(users)]
        tag = self.users[0].split("-")[0]
        self.fail_user, self.drop_user, self.crash_user = f"{tag}-fail", f"{tag}-drop", f"{tag}-crash"
        self.concurrency = concurrency
        self.rng = random.Random(seed)
        self.kill_broker = kill_broker
        self.console = console
        self.placement = Placement()
        self.payments = Payments()
        self._lock = threading.Lock()

    @property
    def all_users(self) -> list[str]:
        return [*self.users, self.drop_user, self.crash_user, self.fail_user]

    # --- placing ---------------------------------------------------------------
    def _place(self, client: httpx.Client, user: str, amount: Decimal, fault: str | None = None) -> str:
        """POST one order, retrying with the same Idempotency-Key while the broker is away."""
        headers = {"Idempotency-Key": uuid.uuid4().hex}
        if fault:
            headers["X-Fault"] = fault
        for _attempt in range(60):
            try:
                resp = client.post(f"{self.t.order_url}/orders", json={"user_id": user, "amount": str(amount)}, headers=headers)
            except httpx.HTTPError:
                if fault == "crash-after-commit":
                    return "crashed (recovered by restart + check-back)"
                self._retried()
                time.sleep(0.5)
                continue
            if resp.status_code in (200, 201):
                self._pay(client, resp.json()["order_id"])
                return "committed" if resp.json()["message_state"] == "committed" else "pending check-back"
            code = resp.json().get("code", "") if resp.headers.get("content-type", "").endswith("json") else ""
            if code == "LOCAL_TRANSACTION_FAILED" and fault == "fail-local-tx":
                return "rolled back (local transaction failed)"
            if code == "FAULTS_DISABLED":
                raise SystemExit("the order service refuses X-Fault: run `halfmq up` (faults on) or set ORDER_FAULTS_ENABLED=true")
            if resp.status_code >= 500:
                self._retried()
                time.sleep(0.5)
                continue
            raise RuntimeError(f"order refused: {resp.status_code} {resp.text[:200]}")
        return "gave up (broker unavailable)"

    def _pay(self, client: httpx.Client, order_id: str) -> None:
        """Pay most orders right after placing them (``pays``); the others are cancelled when their payment falls due."""
        if not pays(order_id):
            return
        for _attempt in range(20):
            try:
                resp = client.post(f"{self.t.order_url}/orders/{order_id}/pay")
            except httpx.HTTPError:
                time.sleep(0.5)
                continue
            if resp.status_code in (200, 409):
                with self._lock:
                    (self.payments.paid if resp.status_code == 200 else self.payments.refused).add(order_id)
                return
            if resp.status_code < 500:
                raise RuntimeError(f"payment refused: {resp.status_code} {resp.text[:200]}")
            time.sleep(0.5)
        with self._lock:
            self.payments.unknown.add(order_id)

    def _retried(self) -> None:
        with self._lock:
            self.placement.retries += 1

    def _wait_healthy(self, url: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        raise RuntimeError(f"{url} did not come back within {timeout}s")

    def _cluster_views(self, urls: list[str]) -> list[tuple[str, dict[str, Any]]]:
        token = self._admin_token()
        headers = {"authorization": f"Bearer {token}"} if token else {}
        views = []
        for url in urls:
            try:
                view = httpx.get(f"{url}/v1/cluster", headers=headers, timeout=2).json()
            except (httpx.HTTPError, ValueError):
                continue
            if isinstance(view, dict):
                views.append((url, view))
        return views

    def _leader(self) -> tuple[str, dict[str, Any]]:
        """The broker to kill: the one broker, or in a broker set (``--replicas``) the node that leads, with its view."""
        if self.t.replicas > 1:
            for url, view in self._cluster_views(self.t.broker_urls.split(",")):
                if view.get("role") == "leader":
                    return url, view
        return self.t.broker_url, {}

    def _kill_broker(self) -> None:
        assert self.kill_broker is not None
        url, view = self._leader()
        pid = self.kill_broker(url)
        if pid is None:
            self.console.print("[yellow]chaos: the broker to kill is not one the demo started; nothing killed[/]")
            return
        killed_at = time.monotonic()
        self.placement.broker_kills += 1
        what = "the leader of the broker set" if self.t.replicas > 1 else "the broker"
        self.console.print(f"[yellow]chaos: kill -9 of {what} (pid {pid}) in the middle of the run[/]")
        if self.t.replicas > 1 and view:
            others = [u for u in self.t.broker_urls.split(",") if u != url]
            self._watch = threading.Thread(target=self._report_failover, daemon=True, name="demo-failover",
                                           args=(others, str(view.get("node_id")), int(view.get("term") or 0), killed_at))
            self._watch.start()

    def _report_failover(self, urls: list[str], killed: str, term: int, killed_at: float, wait: float = 60) -> None:
        """Who took over from ``killed``, and how long after the kill (what an operator of a set wants to know)."""
        while (waited := time.monotonic() - killed_at) < wait:
            found = new_leader([view for _, view in self._cluster_views(urls)], killed, term)
            if found is not None:
                leader, new_term = found
                with self._lock:
                    self.placement.failovers.append({"killed": killed, "leader": leader, "term": new_term,
                                                     "seconds": round(waited, 2)})
                self.console.print(f"[yellow]failover: {killed} killed, {leader} leads term {new_term} after {waited:.2f} s[/]")
                return
            time.sleep(0.1)
        self.console.print(f"[red]failover: no node took over from {killed} within {wait:.0f} s[/]")

    def wait_for_failover_report(self) -> None:
        """Before the report is written: the failover watch has printed what it saw."""
        watch = getattr(self, "_watch", None)
        if watch is not None:
            watch.join()

    def place_all(self) -> Placement:
        plan: list[tuple[str, Decimal, str | None]] = [
            (self.rng.choice(self.users), Decimal(self.rng.randint(100, 20000)) / 100, None) for _ in range(self.orders)
        ]
        plan += [(self.fail_user, Decimal("9.99"), "fail-local-tx")] * 5
        plan += [(self.drop_user, Decimal(self.rng.randint(100, 5000)) / 100, "drop-end") for _ in range(5)]
        self.rng.shuffle(plan)
        kill_at = len(plan) * 2 // 5 if self.kill_broker is not None else -1
        columns = (TextColumn("placing orders"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, console=self.console) as progress, httpx.Client(timeout=30) as client, ThreadPoolExecutor(self.concurrency) as pool:
            task = progress.add_task("orders", total=len(plan) + 2)
            done = 0

            def one(item: tuple[str, Decimal, str | None]) -> None:
                outcome = self._place(client, *item)
                with self._lock:
                    self.placement.outcomes[outcome] += 1
                progress.advance(task)

            futures = []
            for i, item in enumerate(plan):
                if i == kill_at:
                    for f in futures:
                        f.result()
                    self._kill_broker()
                futures.append(pool.submit(one, item))
            for f in futures:
                f.result()
            for _ in range(2):  # the order service really dies; `up` restarts it
                one((self.crash_user, Decimal(self.rng.randint(100, 5000)) / 100, "crash-after-commit"))
                self._wait_healthy(self.t.order_url)
            done = len(plan) + 2
            progress.update(task, completed=done)
        self.wait_for_failover_report()
        return self.placement

    # --- observing -------------------------------------------------------------
    def committed_orders(self) -> dict[str, tuple[str, Decimal]]:
        out: dict[str, tuple[str, Decimal]] = {}
        with httpx.Client(timeout=30) as client:
            for user in self.all_users:
                offset: int | None = 0
                while offset is not None:
                    page = client.get(f"{self.t.order_url}/orders", params={"user_id": user, "limit": 500, "offset": offset}).json()
                    for o in page["orders"]:
                        out[o["order_id"]] = (o["user_id"], Decimal(o["amount"]))
                    offset = page["next_offset"]
        return out

    def _admin_token(self) -> str | None:
        """Reading ORDER_TOPIC back is an operator's job: the admin token `up` generated, if auth is on."""
        creds = self.t.credentials
        if creds is None or not creds.token_file("admin").exists():
            return None
        return creds.token("admin")

    def order_topic_bodies(self) -> list[dict[str, Any]]:
        """The demo users' messages on ORDER_TOPIC, decoded, queue by queue in queue order (none before the topic exists)."""
        mine = set(self.all_users)
        bodies: list[dict[str, Any]] = []
        with Producer(self.t.broker_urls, token=self._admin_token(), retries=20) as producer:
            try:
                topic = producer.get_topic("ORDER_TOPIC")
            except Exception:  # noqa: BLE001 — no topic yet means nothing visible yet
                return []
            for q in topic.queues:
                offset = q.min_offset
                while offset < q.max_offset:
                    page = producer.read("ORDER_TOPIC", q.queue_id, offset, 1000)
                    bodies.extend(body for body in map(orjson.loads, (m.body for m in page.messages)) if body.get("user_id") in mine)
                    if not page.messages:
                        break
                    offset = page.next_offset
        return bodies

    def visible_order_ids(self) -> list[str]:
        """The orders on ORDER_TOPIC (a refund's message is not one: its order's is the one counted)."""
        return [b["order_id"] for b in self.order_topic_bodies() if b.get(KIND, OrderEvent.ORDER.value) == OrderEvent.ORDER.value]

    def credits(self) -> tuple[dict[str, int], int]:
        balances, count = {}, 0
        with httpx.Client(timeout=30) as client:
            for user in self.all_users:
                data = client.get(f"{self.t.credit_url}/users/{user}/credits").json()
                balances[user] = data["balance"]
                count += data["credits"]
        return balances, count

    def wait_settled(self, orders: dict[str, tuple[str, Decimal]], points_per_unit: int, timeout: float = 180,
                     refunded: Collection[str] = ()) -> None:
        expected: Counter[str] = Counter()
        for user, amount in orders.values():
            expected[user] += int(amount // 1) * points_per_unit
        for oid in refunded:
            user, amount = orders[oid]
            expected[user] -= int(amount // 1) * points_per_unit
        columns = (TextColumn("waiting for credits"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        deadline = time.monotonic() + timeout
        with Progress(*columns, console=self.console) as progress:
            task = progress.add_task("credits", total=len(orders) + len(refunded))
            while time.monotonic() < deadline:
                balances, count = self.credits()
                progress.update(task, completed=min(count, len(orders) + len(refunded)))
                if count >= len(orders) + len(refunded) and all(balances.get(u, 0) == p for u, p in expected.items()):
                    return
                time.sleep(1)

    # --- refunding: a refund goes to its order's message group, so it is credited after its order ---------
    def refund_some(self, orders: dict[str, tuple[str, Decimal]], share: float = 0.05) -> frozenset[str]:
        """Refund ``share`` of the plain users' orders (at least one), through POST /orders/{id}/refund; the ones refunded."""
        users = set(self.users)
        mine = sorted(oid for oid, (user, _) in orders.items() if user in users)
        chosen = self.rng.sample(mine, max(1, round(len(mine) * share))) if mine else []
        with httpx.Client(timeout=30) as client, ThreadPoolExecutor(self.concurrency) as pool:
            done = list(pool.map(lambda oid: self._refund(client, oid), chosen))
        refunded = frozenset(oid for oid, ok in zip(chosen, done, strict=True) if ok)
        self.console.print(f"refunded {len(refunded)} of {len(orders)} orders, each in its user's message group")
        return refunded

    def _refund(self, client: httpx.Client, order_id: str) -> bool:
        """POST one refund, retrying while the broker is away or the order's message still waits for its check-back."""
        for _attempt in range(60):
            try:
                resp = client.post(f"{self.t.order_url}/orders/{order_id}/refund")
            except httpx.HTTPError:
                self._retried()
                time.sleep(0.5)
                continue
            if resp.status_code == 201:
                return True
            code = resp.json().get("code", "") if resp.headers.get("content-type", "").endswith("json") else ""
            if code == "ORDER_ALREADY_REFUNDED":  # a retry of a refund whose answer was lost
                return True
            if code == "ORDER_NOT_SENT" or resp.status_code >= 500:
                self._retried()
                time.sleep(0.5)
                continue
            raise RuntimeError(f"refund refused: {resp.status_code} {resp.text[:200]}")
        return False
