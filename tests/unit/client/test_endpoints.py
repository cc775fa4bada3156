"""The wire as data (halfmq.client.endpoints): where is my message, and a nack's reason, checked without HTTP."""

from __future__ import annotations

from halfmq.client import endpoints
from halfmq.wire import MAX_NACK_REASON, JourneyEventKind, MessageJourney, MessageSummary, to_wire


def summary(msg_id: str) -> dict:
    return {"msg_id": msg_id, "topic": "ORDERS", "queue_id": 0, "commit_log_offset": 0, "store_timestamp": 1, "queue_offset": 0}


def test_a_nack_carries_its_reason_cut_at_max_nack_reason_and_an_ack_none() -> None:
    nack = endpoints.settle("billing", "ORDERS", "nack", ["h1"], "x" * (MAX_NACK_REASON + 10))
    assert nack.path == "/v1/consumer-groups/billing/topics/ORDERS/nack"
    assert to_wire(nack.body) == {"receipt_handles": ["h1"], "reason": "x" * MAX_NACK_REASON}
    assert to_wire(endpoints.settle("billing", "ORDERS", "nack", ["h1"]).body) == {"receipt_handles": ["h1"]}
    assert to_wire(endpoints.settle("billing", "ORDERS", "ack", ["h1"]).body) == {"receipt_handles": ["h1"]}


def test_find_messages_asks_the_search_route_and_answers_the_summaries_newest_first() -> None:
    call = endpoints.find_messages("order-42", 1_700_000_000_000, 50)
    assert (call.method, call.path, call.params) == ("GET", "/v1/messages", {"key": "order-42", "since": 1_700_000_000_000, "limit": 50})
    found = call.parse({"key": "order-42", "messages": [summary("B"), summary("A")]})
    assert [type(m) for m in found] == [MessageSummary, MessageSummary] and [m.msg_id for m in found] == ["B", "A"]


def test_a_journey_is_asked_by_the_id_as_one_path_segment_and_decoded_to_the_wire_struct() -> None:
    call = endpoints.message_journey("C0A8/01%")
    assert (call.method, call.path) == ("GET", "/v1/messages/C0A8%2F01%25")
    journey = call.parse({"message": summary("C0A8/01%"), "events": [{"kind": "nacked", "group": "billing", "attempt": 1, "detail": "db down"}]})
    assert isinstance(journey, MessageJourney)
    assert (journey.events[0].kind, journey.events[0].detail) == (JourneyEventKind.NACKED, "db down")
