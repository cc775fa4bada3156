"""schemathesis against a real broker's /openapi.json: no 5xx and no answer that breaks its documented schema.

Bounded (a few examples per operation) so the suite stays quick; a failure names the
operation and the request that broke it. The operations are driven from one test with
hypothesis directly (not schemathesis' pytest fixture integration, whose subtests broke
under pytest 9), so every operation runs and all failures are reported together.
"""

from __future__ import annotations

import pytest

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.specs.openapi.checks import response_schema_conformance  # noqa: E402


def test_no_operation_answers_5xx_or_breaks_its_schema(broker) -> None:
    schema = schemathesis.openapi.from_url(f"{broker.url}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) > 20, "the document lists the broker's routes, hot ones included"
    failures: dict[str, str] = {}
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def check(case) -> None:
            case.call_and_validate(checks=[not_a_server_error, response_schema_conformance], timeout=40)

        try:
            check()
        except Exception as failed:  # noqa: BLE001 - collected, reported below with the operation
            failures[operation.label] = f"{type(failed).__name__}: {failed}"[:2000]
    print(f"\nschemathesis: {len(operations)} operations, {len(failures)} failing")
    assert not failures, "\n\n".join(f"{label}\n{why}" for label, why in failures.items())
