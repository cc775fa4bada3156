"""The footprint table renders every client of a `halfmq bench footprint` result, with the earlier figures."""

from __future__ import annotations

import json

from halfmq.bench.footprint import CLIENTS, render
from tests.support.package_layout import ROOT


def test_the_footprint_table_has_a_row_per_client_and_says_what_came_before() -> None:
    doc = json.loads((ROOT / "docs" / "bench" / "footprint.json").read_text())
    lines = render(doc)
    for client in CLIENTS:
        assert any(line.startswith(f"| {client.name} | ") for line in lines), client.name
    assert any(line.startswith("| redis-py |") and line.endswith("| 1.00× |") for line in lines)
    assert any("51 packages / 657 MB" in line and "23 packages / 29.2 MB" in line for line in lines)
