"""Response builders shared by the membership code (errors and version-dependent defaults).

Kafka's response constructors patch a few fields per version; so do these:
JoinGroupResponse ``protocol_name`` is nullable only from v7 (``""`` before), and
SyncGroup's ``protocol_type``/``protocol_name`` exist from v5 (nullable there).
"""

from __future__ import annotations

from wire.error_codes import ErrorCode
from wire.messages import JoinGroupResponse, SyncGroupResponse

__all__ = ["join_error", "sync_error", "fix_join_for_version"]


def join_error(member_id: str, code: ErrorCode) -> JoinGroupResponse:
    return JoinGroupResponse(
        error_code=int(code), member_id=member_id, generation_id=-1,
        protocol_type=None, protocol_name=None, leader="", members=[],
    )


def sync_error(code: ErrorCode) -> SyncGroupResponse:
    return SyncGroupResponse(error_code=int(code), protocol_type=None, protocol_name=None,
                             assignment=b"")


def fix_join_for_version(response: JoinGroupResponse, version: int) -> JoinGroupResponse:
    """Make ``response`` encodable at ``version`` the way Kafka's JoinGroupResponse does."""
    if version < 7 and response.protocol_name is None:
        response.protocol_name = ""
    if response.leader is None:
        response.leader = ""
    return response
