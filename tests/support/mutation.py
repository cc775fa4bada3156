"""Mutation testing of the core decisions (bin/mutation): mutmut 3 over a staged copy of the package.

mutmut 3 copies the code it mutates into ``mutants/`` and puts that folder first on sys.path. Our
folders are mapped into ``halfmq`` by package-dir, so in the checkout the tests would import the
editable install's originals and every mutant would survive. The run therefore works in a staged
tree laid out as the wheel has it (``package_layout.stage``), where ``mutants/halfmq`` is the package
the tests import. Only the fast unit tests of each module run; mutmut picks, per mutant, the tests
that called the mutated function.

Usage: bin/mutation [--all] [--keep-going]; exit 1 when a gated module scores below THRESHOLD.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tests.support.package_layout import ROOT, folder_of, stage

THRESHOLD = 0.90  # share of mutants the unit tests must kill in every gated module
WORK = ROOT / "build" / "mutation"
CHILDREN = 2  # the machine's cores

# The core decisions CI gates, each with the unit tests that own it (import path as installed).
GATED: dict[str, tuple[str, ...]] = {
    "halfmq/broker/half_messages/state_machine.py": ("tests/unit/broker/half_messages/test_state_machine.py",),
    "halfmq/broker/half_messages/check_policy.py": ("tests/unit/broker/half_messages/test_check_policy.py",),
    "halfmq/broker/store/record.py": ("tests/unit/broker/store/test_record.py",),
    "halfmq/broker/delivery/receipt_handle.py": ("tests/unit/broker/delivery/test_receipt_handle.py",),
    "halfmq/services/order/rules.py": ("tests/unit/services/order/test_rules.py",),
    "halfmq/client/sqlalchemy/horizon.py": ("tests/unit/client/sqlalchemy/test_horizon.py",),
    "halfmq/services/credit/rules.py": ("tests/unit/services/credit/test_rules.py",),
    "halfmq/broker/producer_transactions/producer_state_machine.py": ("tests/unit/broker/producer_transactions/test_producer_state_machine.py",),
    "halfmq/broker/producer_transactions/producer_timeout.py": ("tests/unit/broker/producer_transactions/test_producer_timeout.py",),
    "halfmq/broker/messages/names.py": ("tests/unit/broker/messages/test_names.py",),
    "halfmq/broker/serving/allowed_hosts.py": ("tests/unit/broker/serving/test_allowed_hosts.py",),
    "halfmq/broker/producer_transactions/held_bytes.py": ("tests/unit/broker/producer_transactions/test_held_bytes.py",),
    "halfmq/broker/cluster/decisions.py": ("tests/unit/broker/cluster/test_decisions.py", "tests/unit/broker/cluster/test_high_watermark.py",
                                          "tests/unit/broker/cluster/test_leader_claims.py"),
}
# --all: every module of broker/store, half_messages, producer_transactions, idempotence and delivery against
# their unit tests (reported, not gated). The stateful transaction test is left out: 17 s a run, and it would run for most mutants.
ALL_TESTS = ("tests/unit/broker/store", "tests/unit/broker/half_messages", "tests/unit/broker/producer_transactions",
             "tests/unit/broker/idempotence", "tests/unit/broker/delivery")
ALL_SKIP = "--ignore=tests/unit/broker/half_messages/test_transaction_stateful.py"

DETECTED = {"killed", "timeout", "caught by type check"}


def _toml_list(items: list[str]) -> str:
    return "[" + ", ".join(json.dumps(item) for item in items) + "]"


def prepare(work: Path, modules: list[str], tests: list[str]) -> None:
    """The staged tree: the package as installed, the tests, and pyproject with a [tool.mutmut] table."""
    shutil.rmtree(work, ignore_errors=True)
    stage(work)
    shutil.copytree(ROOT / "tests", work / "tests", ignore=shutil.ignore_patterns("__pycache__", "data"))
    config = (ROOT / "pyproject.toml").read_text()
    assert "[tool.mutmut]" not in config, "bin/mutation writes its own [tool.mutmut] table"
    (work / "pyproject.toml").write_text(config + f"""
[tool.mutmut]
source_paths = ["halfmq"]
only_mutate = {_toml_list(modules)}
pytest_add_cli_args = ["-p", "no:cacheprovider", "-q"]
pytest_add_cli_args_test_selection = {_toml_list(tests)}
use_git_change_detection = false
""")


def scores(work: Path, modules: list[str]) -> dict[str, dict]:
    """Per module: mutants, detected, survivors (by name) and the score, read from mutmut's meta files."""
    from mutmut.stats import status_by_exit_code

    out: dict[str, dict] = {}
    for module in modules:
        meta = work / "mutants" / (module + ".meta")
        codes = json.loads(meta.read_text())["exit_code_by_key"] if meta.exists() else {}
        statuses = {name: status_by_exit_code[code] for name, code in codes.items()}
        detected = sum(status in DETECTED for status in statuses.values())
        out[module] = {
            "mutants": len(statuses),
            "detected": detected,
            "score": detected / len(statuses) if statuses else None,  # None: nothing mutated, which fails a gate
            "survivors": sorted(name for name, status in statuses.items() if status not in DETECTED),
        }
    return out


def show(work: Path, mutant: str) -> str:
    mutmut = Path(sys.executable).with_name("mutmut")
    return subprocess.run([str(mutmut), "show", mutant], cwd=work, capture_output=True, text=True).stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bin/mutation", description=__doc__.splitlines()[0])
    parser.add_argument("--all", action="store_true", help="every module of broker/store, half_messages, producer_transactions, idempotence and delivery too")
    parser.add_argument("--diffs", action="store_true", help="print each survivor's diff")
    args = parser.parse_args(argv)

    modules, tests = list(GATED), sorted({t for owned in GATED.values() for t in owned})
    if args.all:
        packages = ("halfmq.broker.store", "halfmq.broker.half_messages", "halfmq.broker.producer_transactions",
                    "halfmq.broker.idempotence", "halfmq.broker.delivery")
        every = [f"{p.replace('.', '/')}/{m.name}" for p in packages for m in folder_of(p).glob("*.py") if m.name != "__init__.py"]
        modules = sorted(set(modules) | set(every))
        tests = sorted(set(tests) | set(ALL_TESTS)) + [ALL_SKIP]

    prepare(WORK, modules, tests)
    started = time.monotonic()
    mutmut = Path(sys.executable).with_name("mutmut")
    run = subprocess.run([str(mutmut), "run", "--max-children", str(CHILDREN)], cwd=WORK,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    elapsed = time.monotonic() - started
    if run.returncode != 0:
        print(run.stdout[-5000:])
        print(f"bin/mutation: mutmut run failed with exit code {run.returncode}", file=sys.stderr)
        return 2

    result = scores(WORK, modules)
    failed = [m for m in GATED if result[m]["score"] is None or result[m]["score"] < THRESHOLD]
    (WORK / "summary.json").write_text(json.dumps({"threshold": THRESHOLD, "seconds": round(elapsed, 1),
                                                   "modules": result, "below_threshold": failed}, indent=2))
    print(f"{'module':<46} {'mutants':>7} {'killed':>7} {'score':>6}")
    for module, r in result.items():
        mark = "  < gate" if module in failed else ("" if module in GATED else "  (not gated)")
        score = "-" if r["score"] is None else f"{r['score']:.0%}"
        print(f"{module:<46} {r['mutants']:>7} {r['detected']:>7} {score:>6}{mark}")
    for r in result.values():
        for name in r["survivors"]:
            print(f"survived: {name}")
            if args.diffs:
                print(show(WORK, name))
    print(f"{len(modules)} modules in {elapsed:.0f} s; summary in {WORK.relative_to(ROOT)}/summary.json")
    if failed:
        print(f"bin/mutation: below {THRESHOLD:.0%}: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
