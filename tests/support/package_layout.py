"""The repository's folders as the installed `halfmq` package sees them (pyproject's package-dir).

The repository keeps the folders DESIGN section 2 names (broker/, services/, …) and setuptools maps
them into one import name. Tools that walk a package's directory (import-linter's grimp) see only
the real folder halfmq/, so `stage` lays the mapped tree out for them as a wheel would.
"""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _setuptools() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def package_dirs() -> dict[str, Path]:
    """Import name -> folder of the repository, for every mapped root."""
    return {name: ROOT / folder for name, folder in _setuptools()["package-dir"].items()}


def listed_packages() -> set[str]:
    return set(_setuptools()["packages"])


def folder_of(package: str) -> Path:
    """The folder setuptools reads `package` from: the longest mapped prefix, then plain nesting."""
    roots = package_dirs()
    parts = package.split(".")
    for cut in range(len(parts), 0, -1):
        prefix = ".".join(parts[:cut])
        if prefix in roots:
            return roots[prefix].joinpath(*parts[cut:])
    raise LookupError(f"{package} is under no mapped root")


def packages_on_disk() -> set[str]:
    """Every folder with an __init__.py under a mapped root, named as installed."""
    roots = package_dirs()
    claimed = {folder.resolve() for folder in roots.values()}
    found: set[str] = set()
    for name, folder in roots.items():
        for init in folder.rglob("__init__.py"):
            rel = init.parent.relative_to(folder).parts
            if any(folder.joinpath(*rel[:i]).resolve() in claimed for i in range(1, len(rel) + 1)):
                continue  # a root of its own (a mapped folder nested in another)
            found.add(".".join([name, *rel]))
    return found


def stage(target: Path) -> Path:
    """Copy the Python files of every listed package to target/<import path>, as the wheel has them."""
    for package in listed_packages():
        source = folder_of(package)
        dest = target.joinpath(*package.split("."))
        dest.mkdir(parents=True, exist_ok=True)
        for module in source.glob("*.py"):
            shutil.copy2(module, dest / module.name)
    return target
