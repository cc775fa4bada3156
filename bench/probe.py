"""Small blocking HTTP calls a scenario makes around the measured runs (setup, counters).

Never on the measured path, so plain urllib is enough and adds no dependency.
"""

from __future__ import annotations

import json
import re
import urllib.request
from typing import Any


def call(method: str, url: str, body: dict | None = None, timeout: float = 10.0) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={"content-type": "application/json"})  # noqa: S310 - loopback only
    with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - loopback only
        raw = resp.read()
    return json.loads(raw) if raw else None


def create_topic(broker_url: str, name: str, queues: int = 4) -> None:
    call("POST", f"{broker_url}/v1/topics", {"name": name, "queues": queues})


def metric(broker_url: str, name: str) -> float | None:
    """One unlabelled sample of the broker's /metrics (e.g. ``halfmq_fsyncs``)."""
    with urllib.request.urlopen(f"{broker_url}/metrics", timeout=10) as resp:  # noqa: S310
        text = resp.read().decode()
    m = re.search(rf"^{re.escape(name)}(?:_total)? ([0-9.eE+-]+)$", text, re.MULTILINE)
    return float(m.group(1)) if m else None
