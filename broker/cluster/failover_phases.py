"""How long one failover took on the node that took over, phase by phase (issue 32: each failover on record).

The node marks when each step ended on its monotonic clock; the phases are the
gaps between the marks, so they add up to the total by construction:

- ``lease``: from the old leader's last answer to this node until this node saw
  its leader key gone (a watch event, or the tick as a fallback): the lease running out;
- ``election``: from then until this node's compare-and-put of the key succeeded;
- ``reopen``: the runtime built again as leader over the store kept open (the half index, the coordinator's replay);
- ``first_ack``: from then until the first write was acknowledged (ack=quorum: a follower
  of the new term has it on disk too).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PHASES = ("lease", "election", "reopen", "first_ack")


@dataclass
class FailoverPhases:
    started: float  # the old leader's last answer to this node (or, if it followed no one, when it saw no leader)
    ends: dict[str, float] = field(default_factory=dict)

    def mark(self, phase: str, at: float) -> None:
        """``phase`` ended at ``at`` (the first mark of a phase counts)."""
        if phase not in PHASES:
            raise ValueError(f"not a failover phase: {phase!r}")
        self.ends.setdefault(phase, at)

    @property
    def done(self) -> bool:
        return PHASES[-1] in self.ends

    def record(self) -> dict[str, Any]:
        """``seconds`` and ``phases`` (milliseconds rounded; the phases add up to ``seconds``)."""
        phases: dict[str, float] = {}
        before = self.started
        for phase in PHASES:
            if phase in self.ends:
                end = max(before, self.ends[phase])
                phases[phase] = round(end - before, 3)
                before = end
        return {"seconds": round(sum(phases.values()), 3), "phases": phases}
