"""Ordering a unit test's concurrent steps by the event loop's steps, never by the wall clock.

``asyncio.sleep(0)`` lets every task that can go on take one step and lets no time pass: a test that waits for
another task does it in steps (``until``), and a test that checks that something has *not* happened checks it after
every task has had its chance (``run_ready``), not after a sleep that hopes it was long enough.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

READY_STEPS = 100  # far more than any chain of wake-ups in a unit test (each hop takes one)
UNTIL_STEPS = 10_000


async def run_ready(steps: int = READY_STEPS) -> None:
    """Let every task that can go on do so, ``steps`` loop passes deep; no timer comes due meanwhile but by chance."""
    for _ in range(steps):
        await asyncio.sleep(0)


async def until(condition: Callable[[], object], steps: int = UNTIL_STEPS) -> None:
    """Return at the first loop step where ``condition()`` is true; fail if it is not after ``steps`` steps.

    For what other tasks of this loop do. What a thread finishes (an fsync, ``asyncio.to_thread``) is awaited through
    its future or an event, not counted in steps.
    """
    for _ in range(steps):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError(f"not true after {steps} event-loop steps")
