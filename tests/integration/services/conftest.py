from __future__ import annotations

import uuid

import pytest


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request, tmp_path) -> str:
    """The same test on SQLite and on a real PostgreSQL database of its own."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/test.db"
        return
    cluster = request.getfixturevalue("postgres")
    name = f"t_{uuid.uuid4().hex[:12]}"
    url = cluster.create_database(name)
    yield url
    cluster.drop_database(name)
