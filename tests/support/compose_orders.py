"""Orders placed on a compose stack and the check that each committed one is credited exactly once.

One copy for both compose tests (one broker, and the replicated set): they differ in the fault, not in what
"credited exactly once" means.
"""

from __future__ import annotations

import httpx

from tests.support.compose import ComposeStack


def place(client: httpx.Client, stack: ComposeStack, user: str, fault: str | None = None, timeout: float = 60) -> int | None:
    """POST /orders for ``user``; the status code, or None when no answer came (a crash fault, a dead node)."""
    headers = {"X-Fault": fault} if fault else {}
    try:
        return client.post(f"{stack.url('order')}/orders", json={"user_id": user, "amount": "3"}, headers=headers,
                           timeout=timeout).status_code
    except httpx.TransportError:
        return None


def settled(client: httpx.Client, stack: ComposeStack, users: list[str]) -> dict[str, tuple[list[str], list[str]]] | None:
    """{user: (order ids, credited order ids)} once every order of every user has its credit, else None."""
    seen = {}
    for user in users:
        orders = client.get(f"{stack.url('order')}/orders", params={"user_id": user}, timeout=10)
        credits = client.get(f"{stack.url('credit')}/users/{user}/credits", timeout=10)
        orders.raise_for_status()
        credits.raise_for_status()
        seen[user] = ([o["order_id"] for o in orders.json()["orders"]], [r["order_id"] for r in credits.json()["records"]])
    return seen if all(sorted(o) == sorted(c) for o, c in seen.values()) else None


def assert_credited_exactly_once(seen: dict[str, tuple[list[str], list[str]]], acked: list[str], refused: list[str],
                                 unknown: list[str]) -> int:
    """An accepted order exists once and is credited once; a refused one does not exist; an unanswered one at most once.

    Answers how many orders were committed.
    """
    for user in acked:
        orders, credits = seen[user]
        assert len(orders) == 1 and credits == orders, f"{user}: orders {orders}, credits {credits}"
    for user in refused:
        assert seen[user] == ([], []), f"{user} was refused yet has {seen[user]}"
    for user in unknown:
        orders, credits = seen[user]
        assert len(orders) <= 1 and credits == orders, f"{user}: orders {orders}, credits {credits}"
    return sum(len(o) for o, _ in seen.values())
