"""Messages at and past the broker's per-message limits (issue 42's many-keys attack), for the tests that send them."""

from __future__ import annotations

MAX_KEYS = 64
MAX_PROPERTIES = 32 * 1024
SLOW = 2.0  # seconds: the slowest /healthz answer a loop that never stalls gives on a loaded 2-core machine, with room


def many_keys(count: int) -> list[str]:
    return [f"victim-key-{i:06d}" for i in range(count)]


def worst_allowed(body_bytes: int) -> dict:
    """A message at every limit at once: 64 keys and properties filling 32 KiB, the body filling the rest."""
    keys = [f"k{i:02d}-" + "x" * 200 for i in range(MAX_KEYS)]  # 64 keys, ~13 KiB
    # what the broker counts: each name and value in UTF-8 bytes plus two separators; its UNIQ_KEY is 32 characters
    used = len("KEYS") + len(" ".join(keys)) + 2 + len("UNIQ_KEY") + 32 + 2 + len("note") + 2
    filler = MAX_PROPERTIES - used
    return {"body": "b" * body_bytes, "keys": keys, "properties": {"note": "p" * filler}}
