"""The wheel's shape, one switch: the whole distribution (the default), or the SDK alone (``HALFMQ_WHEEL=sdk``).

Everything else is in pyproject.toml. ``HALFMQ_WHEEL=sdk python -m build --wheel`` (or ``pip wheel``) keeps the
packages read from ``halfmq/`` (the SDK and the wire contract it shares with the broker) and the pytest plugin's
entry point, and leaves out every package mapped from another folder (``broker/``, ``cli/``, ``services/``, ``jobs/``,
``bench/``, ``migrations/``) and the ``halfmq`` console script, whose commands are the server's
(docs/decisions/043-sdk-only-wheel.md).
"""

from __future__ import annotations

import os

from setuptools import setup
from setuptools.dist import Distribution

SWITCH = "HALFMQ_WHEEL"
SHAPES = ("full", "sdk")
SDK_ROOT = "halfmq"


def is_sdk(package: str, package_dir: dict[str, str]) -> bool:
    """True when ``package`` is read from the SDK's own folder, not from a folder mapped into the name beside it."""
    return not any(package == root or package.startswith(f"{root}.") for root in package_dir if root != SDK_ROOT)


class HalfmqDistribution(Distribution):
    """pyproject.toml's distribution, cut down to the SDK after the configuration is read when the switch says so."""

    def parse_config_files(self, filenames: object = None, ignore_option_errors: bool = False) -> None:
        super().parse_config_files(filenames, ignore_option_errors)
        shape = os.environ.get(SWITCH, "full")
        if shape not in SHAPES:
            raise SystemExit(f"{SWITCH}={shape!r}: expected one of {', '.join(SHAPES)}")
        if shape == "sdk":
            self._keep_the_sdk_only()

    def _keep_the_sdk_only(self) -> None:
        mapped = dict(self.package_dir or {})
        self.packages = [package for package in self.packages or [] if is_sdk(package, mapped)]
        self.package_data = {package: files for package, files in (self.package_data or {}).items() if is_sdk(package, mapped)}
        self.package_dir = {root: folder for root, folder in mapped.items() if root == SDK_ROOT}
        self.entry_points = {group: entries for group, entries in (self.entry_points or {}).items() if group != "console_scripts"}
        # a build directory of its own: a full build's build/lib would otherwise slip the server's modules into this wheel
        self.command_options.setdefault("build", {})["build_base"] = ("setup.py", os.path.join("build", "sdk-only"))


setup(distclass=HalfmqDistribution)
