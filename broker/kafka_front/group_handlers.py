"""JoinGroup, SyncGroup, Heartbeat and LeaveGroup: Kafka's classic consumer-group protocol on group_coordinator.py.

Each checks the caller may consume as the group (``subscribe`` on it, the right halfmq's own consumer groups need),
then answers the coordinator's result or its refusal in the API's own response shape.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.consumer import HeartbeatResponse, JoinGroupResponse, LeaveGroupResponse, SyncGroupResponse

from halfmq.errors import BrokerError

from .calls import CoordinatedHandlers
from .error_codes import kafka_code
from .group_membership import MembershipError
from .request_header import RequestHeader


class GroupHandlers(CoordinatedHandlers):
    def _may_consume(self, group_id: str, api: str, header: RequestHeader) -> None:
        uc, who, scope = self.using(header, api)
        uc.groups.may_join(who, scope, group_id)

    async def join_group(self, request: Any, header: RequestHeader) -> Any:
        try:
            self._may_consume(request.group_id, "JoinGroup", header)
            rebalance_ms = request.rebalance_timeout_ms if header.api_version >= 1 else request.session_timeout_ms
            answer = await self.coordinator.join(
                request.group_id, request.member_id, header.client_id or "", request.protocol_type,
                [(p.name, bytes(p.metadata)) for p in request.protocols], request.session_timeout_ms, rebalance_ms,
                request.group_instance_id if header.api_version >= 5 else None)
        except (MembershipError, BrokerError) as exc:
            return JoinGroupResponse(throttle_time_ms=0, error_code=code_of(exc), generation_id=-1, protocol_type=request.protocol_type,
                                     protocol_name="", leader="", skip_assignment=False, member_id=request.member_id, members=[])
        member = JoinGroupResponse.JoinGroupResponseMember
        return JoinGroupResponse(
            throttle_time_ms=0, error_code=0, generation_id=answer.generation, protocol_type=request.protocol_type,
            protocol_name=answer.protocol_name, leader=answer.leader, skip_assignment=False, member_id=answer.member_id,
            members=[member(member_id=mid, group_instance_id=None, metadata=meta) for mid, meta in answer.members])

    async def sync_group(self, request: Any, header: RequestHeader) -> Any:
        try:
            self._may_consume(request.group_id, "SyncGroup", header)
            assignment = await self.coordinator.sync(request.group_id, request.member_id, request.generation_id,
                                                     {a.member_id: bytes(a.assignment) for a in request.assignments or []})
        except (MembershipError, BrokerError) as exc:
            return SyncGroupResponse(throttle_time_ms=0, error_code=code_of(exc), protocol_type=None, protocol_name=None, assignment=b"")
        group = self.coordinator.groups[request.group_id]
        return SyncGroupResponse(throttle_time_ms=0, error_code=0, protocol_type=group.protocol_type,
                                 protocol_name=group.protocol_name, assignment=assignment)

    async def heartbeat(self, request: Any, header: RequestHeader) -> Any:
        try:
            self._may_consume(request.group_id, "Heartbeat", header)
            self.coordinator.heartbeat(request.group_id, request.member_id, request.generation_id)
        except (MembershipError, BrokerError) as exc:
            return HeartbeatResponse(throttle_time_ms=0, error_code=code_of(exc))
        return HeartbeatResponse(throttle_time_ms=0, error_code=0)

    async def leave_group(self, request: Any, header: RequestHeader) -> Any:
        """v0-2 name one member; v3+ a list, each answered."""
        leaving = [request.member_id] if header.api_version < 3 else [m.member_id for m in request.members]
        answers = []
        top = 0
        try:
            self._may_consume(request.group_id, "LeaveGroup", header)
        except BrokerError as exc:
            return LeaveGroupResponse(throttle_time_ms=0, error_code=code_of(exc), members=[])
        for member_id in leaving:
            try:
                self.coordinator.leave(request.group_id, member_id)
                code = 0
            except MembershipError as exc:
                code = top = exc.error_code
            answers.append(LeaveGroupResponse.MemberResponse(member_id=member_id, group_instance_id=None, error_code=code))
        return LeaveGroupResponse(throttle_time_ms=0, error_code=top if header.api_version < 3 else 0, members=answers)


def code_of(exc: Exception) -> int:
    if isinstance(exc, MembershipError):
        return exc.error_code
    assert isinstance(exc, BrokerError)
    return kafka_code(exc, group=True)
