"""schemathesis against a real broker's /openapi.json: no 5xx and no answer that breaks its documented schema.

Bounded (a few examples per operation) so the suite stays quick; a failure prints
the request that broke it.
"""

from __future__ import annotations

import pytest

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, settings  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.specs.openapi.checks import response_schema_conformance  # noqa: E402

schema = schemathesis.pytest.from_fixture("broker_schema")


@pytest.fixture
def broker_schema(broker):
    return schemathesis.openapi.from_url(f"{broker.url}/openapi.json")


@schema.parametrize()
@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_operation_answers_5xx_or_breaks_its_schema(case) -> None:
    case.call_and_validate(checks=[not_a_server_error, response_schema_conformance], timeout=40)
