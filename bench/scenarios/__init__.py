"""The scenarios of `halfmq bench`, one module each.

Each module has ``run(ctx) -> dict`` (a scenario result, see ``bench.results``)
that starts and stops its own processes, and ``baselines(driver) -> list[str]``
naming the in-run baselines its cases are compared with. Modules are imported
only when selected, so an optional dependency (PySpark) cannot break the rest.
"""

from __future__ import annotations

import importlib
from types import ModuleType

NAMES = ("send", "tx", "consume", "orders", "recovery", "spark", "eos", "replicated", "rocketmq", "kafka", "timers", "longlife", "faststream")


def module(name: str) -> ModuleType:
    if name not in NAMES:
        raise KeyError(f"unknown scenario {name!r}; choose from {', '.join(NAMES)}")
    return importlib.import_module(f"{__name__}.{name}")
