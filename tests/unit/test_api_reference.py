"""The SDK's API reference (pdoc, tests/support/api_reference.py: what `bin/api-reference` builds), built into a
temporary directory."""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import pdoc.doc
import pytest

import halfmq
from tests.support.api_reference import MODULES, build, sdk_module

NAMED = ("Producer", "TransactionProducer", "Consumer")


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    index = build(tmp_path_factory.mktemp("api-reference"))
    assert index.is_file()
    return index.parent


def _page(reference: Path, module: str) -> str:
    return (reference / f"{module.replace('.', '/')}.html").read_text()


def test_the_reference_has_a_page_for_every_public_module(reference: Path) -> None:
    missing = [module for module in MODULES if not (reference / f"{module.replace('.', '/')}.html").is_file()]
    assert not missing, missing


def test_the_reference_names_the_producers_and_the_consumer(reference: Path) -> None:
    page = _page(reference, "halfmq")
    assert all(f'id="{name}"' in page for name in NAMED), [name for name in NAMED if f'id="{name}"' not in page]


def test_the_reference_has_an_entry_for_every_name_halfmq_exports(reference: Path) -> None:
    page = _page(reference, "halfmq")
    assert not [name for name in halfmq.__all__ if f'id="{name}"' not in page]


def _own_docstring(name: str) -> str:
    """A class's or function's own docstring (not one inherited from Exception, str or a base struct); for a constant,
    the string literal right after its assignment in the module that defines it, as pdoc reads it."""
    value = getattr(halfmq, name)
    if inspect.isclass(value):
        return value.__dict__.get("__doc__") or ""
    if callable(value):
        return value.__doc__ or ""
    defining = [module for module_name, module in sorted(sys.modules.items())
                if module_name.startswith("halfmq") and module is not None and name in vars(module)]
    return next((doc.docstring for module in defining if (doc := pdoc.doc.Module(module).get(name)) and doc.docstring), "")


def test_every_name_halfmq_exports_has_a_docstring() -> None:
    """Driven by ``halfmq.__all__``: the message lists every name without its own docstring."""
    sdk_module("halfmq")
    missing = [name for name in halfmq.__all__ if not _own_docstring(name).strip()]
    assert not missing, f"{len(missing)} of halfmq.__all__ without a docstring of their own: {', '.join(missing)}"
