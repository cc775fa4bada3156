"""The topics `halfmq up` creates once its broker answers, before the services start.

Without them the credit service's first receives meet "topic does not exist" and log
ERROR lines, then back off, so the first orders are credited only after its back-off
(about 2 s): a first run should show neither.
"""

from __future__ import annotations

import time

import httpx


def ensure_topics(urls: list[str], topics: list[str], token: str | None, timeout: float = 30.0) -> str:
    """Create each topic on whichever node takes writes (a set answers 421 until it has a leader); say what happened."""
    headers = {"authorization": f"Bearer {token}"} if token else {}
    left, deadline, last = list(topics), time.monotonic() + timeout, "no broker answered"
    with httpx.Client(headers=headers, timeout=5.0) as http:
        while left and time.monotonic() < deadline:
            for url in urls:
                try:
                    answer = http.post(f"{url}/v1/topics", json={"name": left[0]})
                except httpx.TransportError as error:
                    last = f"{url}: {error}"
                    continue
                if answer.status_code < 300 or answer.status_code == 409:  # created, or there already
                    left.pop(0)
                    break
                last = f"{url}: HTTP {answer.status_code} {answer.text[:200]}"
            else:
                time.sleep(0.2)
    if left:
        return f"could not create {', '.join(left)} ({last}); the first send creates it"
    return f"topics ready: {', '.join(topics)}"
