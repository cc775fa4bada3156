"""Where a unit test waits on the wall clock: a sleep, or a loop until a time comes (tests/test_lint.py keeps them out).

A unit test orders its concurrent steps by events (an ``asyncio.Event``, a future, a fake's record of a call), by
``asyncio.sleep(0)`` yields, by a fake clock or a fake sleep (tests/support/fake_clock.py), or by calling the step
itself. A sleep only hopes the other step has run by then: on a loaded 2-core CI it sometimes has not, and every
sleep costs its length on every run. A wait that cannot go (the code under test sleeps for real and cannot be given a
clock yet) says so on its line: ``# wall-clock: <why>``.

What counts: a call of ``time.sleep`` or ``asyncio.sleep`` (any spelling of the import) other than ``asyncio.sleep(0)``,
and a ``while`` whose condition reads a clock (``while time.monotonic() < deadline``). The files looked at are the
unit tests and the support modules they import, followed through the support modules' own imports.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from tests.support.package_layout import ROOT
from tests.support.source_trees import parse

EXCEPTION_MARK = "# wall-clock:"
SLEEPS = {("time", "sleep"), ("asyncio", "sleep"), ("anyio", "sleep"), ("trio", "sleep")}
CLOCKS = {("time", "time"), ("time", "monotonic"), ("time", "perf_counter"), ("time", "time_ns"), ("time", "monotonic_ns")}


@dataclass(frozen=True, slots=True)
class Wait:
    """One wait on the wall clock: where it is and its source line."""

    path: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.text}"


def _imported_names(tree: ast.Module) -> dict[str, tuple[str, ...]]:
    """Local name -> what it stands for: ``("time",)`` for a module, ``("time", "sleep")`` for a function of one."""
    names: dict[str, tuple[str, ...]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name] = (alias.name,)
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            for alias in node.names:
                names[alias.asname or alias.name] = (node.module, alias.name)
    return names


def _resolved(func: ast.expr, names: dict[str, tuple[str, ...]]) -> tuple[str, ...] | None:
    if isinstance(func, ast.Name):
        return names.get(func.id)
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in names:
        return (*names[func.value.id], func.attr)
    return None


def _is_zero(call: ast.Call) -> bool:
    args = [*call.args, *(k.value for k in call.keywords if k.arg in ("delay", "seconds"))]
    return len(args) == 1 and isinstance(args[0], ast.Constant) and args[0].value == 0


def _marked(lines: list[str], node: ast.AST) -> bool:
    """Whether the statement carries ``# wall-clock: <why>`` (a reason, not just the mark)."""
    first, last = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
    for text in lines[first - 1:last]:
        _, mark, why = text.partition(EXCEPTION_MARK)
        if mark and why.strip():
            return True
    return False


def waits_in(source: str, path: str = "<source>") -> list[Wait]:
    """The wall-clock waits of one module's source that do not carry the exception mark, in line order."""
    tree = parse(source)
    names = _imported_names(tree)
    lines = source.splitlines()
    found: list[Wait] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _resolved(node.func, names) in SLEEPS:
            waits = not (_resolved(node.func, names) == ("asyncio", "sleep") and _is_zero(node))
        elif isinstance(node, ast.While):
            waits = any(isinstance(n, ast.Call) and _resolved(n.func, names) in CLOCKS for n in ast.walk(node.test))
        else:
            continue
        if waits and not _marked(lines, node):
            found.append(Wait(path, node.lineno, lines[node.lineno - 1].strip()))
    return sorted(found, key=lambda w: w.line)


def _support_imports(tree: ast.Module, root: Path) -> set[Path]:
    """The files of tests/support that a module imports (``from .x import`` inside tests/support too)."""
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:  # only tests/support's modules import relatively, from their own folder
                module = "tests.support" + (f".{module}" if module else "")
            modules.add(module)
            modules.update(f"{module}.{alias.name}" for alias in node.names)
    files = set()
    for module in modules:
        if module.startswith("tests.support."):
            candidate = root.joinpath(*module.split(".")).with_suffix(".py")
            if candidate.is_file():
                files.add(candidate)
    return files


def unit_test_files(root: Path = ROOT) -> list[Path]:
    """The unit tests and every support module they reach through imports."""
    files = set((root / "tests" / "unit").rglob("*.py"))
    todo = list(files)
    while todo:
        for imported in _support_imports(parse(todo.pop().read_text()), root):
            if imported not in files:
                files.add(imported)
                todo.append(imported)
    return sorted(files)


def unit_test_waits(root: Path = ROOT) -> list[Wait]:
    return [wait for path in unit_test_files(root) for wait in waits_in(path.read_text(), str(path.relative_to(root)))]
