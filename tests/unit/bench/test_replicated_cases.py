"""The replicated scenario's case selection and its ratios: each case on a set against its one-broker twin of the same run."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console

from halfmq.bench.cli import configure, settings_from
from halfmq.bench.context import Context
from halfmq.bench.scenarios.replicated import _Cases, _with_ratios
from halfmq.bench.settings import BenchSettings


def _cases(tmp_path: Path, **settings: Any) -> _Cases:
    return _Cases(Context(BenchSettings(**settings), Console(quiet=True), root=tmp_path))


def _median(ops: float) -> dict[str, Any]:
    return {"ops_per_s": {"median": ops, "min": ops, "max": ops}}


def test_soak_and_cases_come_from_the_command_line() -> None:
    args = configure(argparse.ArgumentParser()).parse_args(["replicated", "--soak", "600", "--cases", "quorum_soak_c64, leader_c64"])
    settings = settings_from(args)
    assert settings.soak_seconds == 600
    assert settings.cases == ("quorum_soak_c64", "leader_c64")
    assert settings_from(configure(argparse.ArgumentParser()).parse_args(["replicated"])).cases == ()


def test_every_case_runs_without_cases_and_the_soak_only_when_asked_for(tmp_path: Path) -> None:
    cases = _cases(tmp_path)
    assert cases.wants("leader_c64") and cases.wants("orders_set_c64_pg")
    assert not cases.wants("quorum_soak_c64")
    assert _cases(tmp_path, soak_seconds=600).wants("quorum_soak_c64")


def test_cases_narrow_the_run_to_the_named_ones(tmp_path: Path) -> None:
    cases = _cases(tmp_path, soak_seconds=600, cases=("quorum_soak_c64",))
    assert cases.wants("quorum_soak_c64")
    assert cases.wants("quorum_c64", "quorum_soak_c64")  # the set starts for any one of its cases
    assert not cases.wants("single_c64", "leader_c64")
    measured: list[str] = []
    cases.measure("failover", lambda: measured.append("failover") or {})
    assert measured == [] and cases.out == {}


def test_each_case_on_a_set_gets_its_ratio_to_its_one_broker_twin() -> None:
    cases = {"single_c64": _median(10_000), "quorum_c64": _median(4_000), "leader_c64": _median(7_500),
             "orders_c64": _median(1_000), "orders_set_c64": _median(850), "orders_set_c64_pg": _median(300),
             "single_consume_ack_c64": _median(20_000), "consume_ack_c64": _median(10_000)}
    _with_ratios(cases)
    assert {name: case.get("ratio_to_single") for name, case in cases.items()} == {
        "single_c64": None, "quorum_c64": 0.4, "leader_c64": 0.75, "orders_c64": None, "orders_set_c64": 0.85,
        "orders_set_c64_pg": None,  # no orders_c64_pg in this run: no ratio
        "single_consume_ack_c64": None, "consume_ack_c64": 0.5}
