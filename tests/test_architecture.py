"""DESIGN section 2's dependency rules, enforced by import-linter over the package as installed."""

import ast
import subprocess
import sys
from pathlib import Path

from tests.support.package_layout import ROOT, stage
from tests.support.source_trees import parse


def test_import_contracts_hold(tmp_path: Path) -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    staged = stage(tmp_path / "site")  # grimp walks a package's folder; ours is mapped from several
    result = subprocess.run([str(lint), "--no-cache", "--config", str(ROOT / "pyproject.toml")], cwd=staged,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "BROKEN" not in result.stdout
    assert "halfmq.broker.store" in result.stdout and "KEPT" in result.stdout


# import-linter checks the package, not its tests: these must reach the domain as the domain's own code does.
API_FREE_TESTS = ("tests/unit/broker/half_messages", "tests/unit/broker/producer_transactions", "tests/unit/broker/idempotence",
                  "tests/unit/broker/delivery", "tests/integration")


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_transaction_delivery_and_integration_tests_import_nothing_from_the_api_layer() -> None:
    offenders = [f"{path.relative_to(ROOT)}: {module}"
                 for folder in API_FREE_TESTS for path in sorted((ROOT / folder).rglob("*.py"))
                 for module in sorted(_imports(path)) if module == "halfmq.broker.api" or module.startswith("halfmq.broker.api.")]
    assert offenders == []
