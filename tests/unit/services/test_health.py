"""The services' one health probe: a down database is a 503 naming the error, never a 500 page."""

from __future__ import annotations

import orjson

from halfmq.services.health import health


def unreachable() -> bool:
    raise ConnectionRefusedError("no database")


async def test_a_migrated_database_is_healthy() -> None:
    resp = await health(lambda: True)
    assert resp.status_code == 200 and orjson.loads(resp.body) == {"status": "ok", "database": "ok", "migrated": True}


async def test_an_unmigrated_database_is_unhealthy() -> None:
    resp = await health(lambda: False, lambda: (True, {"consuming": True}))
    assert resp.status_code == 503
    assert orjson.loads(resp.body) == {"status": "unhealthy", "database": "ok", "migrated": False, "consuming": True}


async def test_an_unreachable_database_is_a_503_naming_the_error() -> None:
    resp = await health(unreachable)
    assert resp.status_code == 503
    assert orjson.loads(resp.body) == {"status": "unhealthy", "database": "unreachable: ConnectionRefusedError"}


async def test_an_unhealthy_extra_part_makes_the_service_unhealthy() -> None:
    resp = await health(lambda: True, lambda: (False, {"consuming": False}))
    assert resp.status_code == 503 and orjson.loads(resp.body)["consuming"] is False
