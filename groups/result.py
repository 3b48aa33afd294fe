"""What every coordinator call hands back to the adapter."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from groups.pending import Pending
from groups.records import Record

__all__ = ["Result"]


@dataclass(slots=True)
class Result:
    """``records`` go to ``__consumer_offsets`` (in order, one batch) before any response
    produced by this call leaves: ``response`` for the caller, or ``pending`` (JoinGroup and
    SyncGroup: possibly already done) whose callbacks deliver it later.  Parked requests of
    other members that this call completed have had their callbacks run inside the call."""

    records: list[Record] = field(default_factory=list)
    response: Any = None
    pending: Pending | None = None
