"""Which ports the demo's own `halfmq up` takes: the asked-for ones if free, else free ones (a pure decision).

The demo never drives, nor kills, a halfmq it did not start (issue 30, item 13). So when a default
port is taken (someone's broker, a second demo, `halfmq up` running) it moves to a free one and says
so; a port the user chose is not moved: the demo says in one line which one is taken and exits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Wanted:
    flag: str  # the option that sets it: "--broker-port"
    port: int  # the first port
    count: int = 1  # consecutive ports from it (a set's nodes; etcd's client and peer ports)
    given: bool = False  # chosen by the user: taken means refuse, not move


class PortTaken(Exception):
    """A port the user chose is taken by another process; the message is the one line to print."""


@dataclass(frozen=True)
class Choice:
    ports: dict[str, int] = field(default_factory=dict)  # flag -> first port
    moved: list[str] = field(default_factory=list)  # a line for each default port that was taken and moved
    used: frozenset[int] = frozenset()  # every port chosen, runs included


def choose(wanted: Iterable[Wanted], taken: Callable[[int], bool], free_run: Callable[[int, set[int]], int],
           after: Choice | None = None) -> Choice:
    """``after`` plus the first port for each flag; PortTaken for a given port that is taken.

    ``free_run(count, avoid)`` finds ``count`` consecutive free ports outside ``avoid``; the ports of
    ``after`` count as taken (a port derived from an earlier choice is chosen in a second call).
    """
    base = after or Choice()
    used = set(base.used)
    chosen, moved = dict(base.ports), list(base.moved)
    for want in wanted:
        span = range(want.port, want.port + want.count)
        clash = next((p for p in span if p in used or taken(p)), None)
        start = want.port
        if clash is not None:
            if want.given:
                raise PortTaken(f"port {clash} ({want.flag}) is taken by another process; the demo starts its own halfmq "
                                f"and never uses one it did not start: choose another {want.flag}, or leave it out for a free one")
            start = free_run(want.count, used)
            moved.append(f"port {clash} ({want.flag}) is taken by another process: the demo uses {start} instead")
        chosen[want.flag] = start
        used.update(range(start, start + want.count))
    return Choice(chosen, moved, frozenset(used))
