"""Which extra a ``halfmq`` command needs, for a one-line answer instead of a ModuleNotFoundError traceback.

``pip install halfmq`` is the SDK alone; the console script's commands run the server side
(``[broker]``), the demo's services (``[services]``), the Spark job (``[spark]``) or the benchmarks.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from importlib import metadata
from importlib.util import find_spec

__all__ = ["COMMAND_EXTRAS", "extra_modules", "extras_to_install", "missing_extra_line"]

COMMAND_EXTRAS: dict[str | None, tuple[str, ...]] = {
    "up": ("broker", "services"), "demo": ("broker", "services"), "order": ("services",), "credit": ("services",),
    "aggregate": ("spark",), "bench": ("bench",),
}
DEFAULT_EXTRAS = ("broker",)  # `halfmq broker`, `admin`, `--help`: the broker's side
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_EXTRA = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")


def extra_modules(requirements: Iterable[str]) -> dict[str, set[str]]:
    """Each extra's top-level import names, from the distribution's ``Requires-Dist`` lines.

    A self-reference (``halfmq[broker,services]; extra == "bench"``) brings in the named extras' modules.
    """
    modules: dict[str, set[str]] = {}
    includes: dict[str, list[str]] = {}
    for requirement in requirements:
        extra, name = _EXTRA.search(requirement), _NAME.match(requirement)
        if not (extra and name):
            continue
        if name.group(1).lower() == "halfmq":
            inner = requirement[name.end():].partition("[")[2].partition("]")[0]
            includes.setdefault(extra.group(1), []).extend(e.strip() for e in inner.split(",") if e.strip())
        else:
            modules.setdefault(extra.group(1), set()).add(name.group(1).lower().replace("-", "_").replace(".", "_"))
    for extra, others in includes.items():
        for other in others:
            modules.setdefault(extra, set()).update(modules.get(other, ()))
    return modules


def extras_to_install(command: str | None, installed: Callable[[str], bool] | None = None,
                      requirements: Iterable[str] | None = None) -> list[str]:
    """The extras ``command`` needs that are not (fully) installed; all it needs when that cannot be told."""
    needed = COMMAND_EXTRAS.get(command, DEFAULT_EXTRAS)
    if requirements is None:
        try:
            requirements = metadata.requires("halfmq") or []
        except metadata.PackageNotFoundError:
            return list(needed)
    modules = extra_modules(requirements)
    installed = installed or (lambda module: find_spec(module) is not None)
    return [extra for extra in needed if not all(installed(m) for m in modules.get(extra, ()))]


def missing_extra_line(argv: list[str], missing: str | None = None) -> str | None:
    """The one line to print when ``halfmq ARGV`` lacks an extra (``missing``: the module an import did not find);
    None when every extra the command needs is installed."""
    command = next((arg for arg in argv if not arg.startswith("-")), None)
    extras = extras_to_install(command)
    if not extras:
        return None
    what = f"halfmq {command}" if command else "halfmq"
    why = f" ({missing} is missing)" if missing else ""
    return f"{what} needs the {' and '.join(extras)} extra{'s' if len(extras) > 1 else ''}{why}: pip install 'halfmq[{','.join(extras)}]'"
