"""The SDK's API reference, built with pdoc: ``bin/api-reference [DIR]`` (docs/development.md), and by
tests/unit/test_api_reference.py the same way.

The public SDK only, never the server. ``halfmq`` and ``halfmq.client`` resolve their names on first use
(PEP 562) and pdoc reads a module's namespace, so the names in their ``__all__`` are resolved first.
"""

from __future__ import annotations

import sys
from importlib import import_module
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
MODULES = ("halfmq", "halfmq.client", "halfmq.client.sqlalchemy", "halfmq.client.fastapi_checks", "halfmq.client.check_server",
           "halfmq.testing", "halfmq.errors", "halfmq.wire")
DEFAULT_OUT = ROOT / "build" / "api-reference"


def sdk_module(name: str) -> ModuleType:
    """The module, its lazily exported names resolved into its namespace."""
    module = import_module(name)
    for exported in getattr(module, "__all__", ()):
        getattr(module, exported)
    return module


def build(out: Path) -> Path:
    """The reference as HTML in ``out``; returns its index page."""
    import pdoc

    for name in MODULES:
        sdk_module(name)
    pdoc.pdoc(*MODULES, output_directory=out)
    return out / "index.html"


def main(argv: list[str]) -> int:
    out = Path(argv[0]).resolve() if argv else DEFAULT_OUT
    print(build(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
