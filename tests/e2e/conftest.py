"""The compose tests' shared fixtures: the Docker engine they run on, and the figures each module prints at its end."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.docker_engine import DockerEngine
from tests.support.machine_lock import machine_lock
from tests.support.report import report


@pytest.fixture(scope="module")
def figures(request: pytest.FixtureRequest) -> Iterator[dict[str, str]]:
    """What the run measured; printed at the end whether or not it passed, under the module's ``FIGURES_TITLE``."""
    measured: dict[str, str] = {}
    yield measured
    lines = [request.module.FIGURES_TITLE] + [f"  {name}: {value}" for name, value in measured.items()]
    report("\n".join(lines))  # shown also when all passed, by the process that shows the run (tests/support/report.py)


@pytest.fixture(scope="module")
def engine() -> Iterator[DockerEngine]:
    """The engine that answers, else Debian's dockerd started for the module (skipped without one, never on CI).

    One engine per machine (its socket and cache are fixed paths), and a module stops the one it started: the compose
    modules take turns, each holding a lock on the machine for its whole life, so two test processes (bin/test runs
    two) never start, use and stop it under each other."""
    with machine_lock(Path(tempfile.gettempdir()) / "halfmq-docker-engine.lock"):
        engine = DockerEngine()
        try:
            engine.start()
        except RuntimeError as exc:
            if os.environ.get("CI"):
                raise
            pytest.skip(f"no Docker engine: {exc}")
        yield engine
        if engine.started:
            subprocess.run(["docker", "image", "prune", "--force"], env=engine.env(), capture_output=True, timeout=300)  # bounded cache
        engine.stop()
