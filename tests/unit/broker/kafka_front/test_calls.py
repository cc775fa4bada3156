"""Every handler class opens a request the same way: the runtime of the moment, read once, who calls, the audit scope."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from halfmq.broker.kafka_front.calls import FrontHandlers
from halfmq.broker.kafka_front.request_header import RequestHeader
from halfmq.broker.security.access import ANONYMOUS

HEADER = RequestHeader(api_key=3, api_version=8, correlation_id=1, client_id="billing", flexible=False, body_offset=0)


def counting_runtime() -> tuple[Any, list[Any]]:
    reads: list[Any] = []
    runtime = SimpleNamespace(usecases=object())

    def current() -> Any:
        reads.append(runtime)
        return runtime

    return current, reads


def test_calling_reads_the_runtime_once_and_names_the_kafka_api_and_client_in_the_audit_scope() -> None:
    current, reads = counting_runtime()
    runtime, who, scope = FrontHandlers(current, lambda: ANONYMOUS).calling(HEADER, "Metadata")
    assert (runtime, who, scope) == (reads[0], ANONYMOUS, {"path": "kafka:Metadata", "client": "billing"})
    assert len(reads) == 1


def test_using_answers_the_use_cases_of_that_one_runtime() -> None:
    current, reads = counting_runtime()
    uc, who, scope = FrontHandlers(current, lambda: ANONYMOUS).using(HEADER, "Fetch")
    assert (uc, who, scope["path"]) == (reads[0].usecases, ANONYMOUS, "kafka:Fetch")
    assert len(reads) == 1
