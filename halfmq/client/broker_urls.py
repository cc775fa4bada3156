"""A broker set's URLs on the client side: which node to ask, and where a call goes after each failure.

``base_url`` (and the services' ``*_BROKER_URL``) may be a comma-separated list
of the nodes of a broker set. A request goes to the node believed to lead. After
a failure, ``next_url`` (a pure decision) says where the call goes next:

* 421 NOT_LEADER names the leader, which is followed only if it is one of the
  listed URLs (a bearer token is never sent to an address the user did not
  configure) and not suspected of hanging; otherwise the next URL is asked.
* A node that cannot be reached, or that took the request and did not answer
  in time (a hung process, a GC pause, a proxy that completes handshakes and
  never answers), is suspected for ``suspect_for`` seconds: calls start at the
  next URL, and a 421 naming it (its followers name it until its lease runs
  out) is not followed back to it. A leader that is only slow is asked again
  once the suspicion ends.
* Any other answer (a 4xx, a 503 of the leader's own) keeps the call where it is.

Which of these repeats the call is the second half of the rule. A 421 or a
failure to connect did nothing on the broker, so ``Route`` repeats every call on
the next node at once (pausing briefly after each round of the set, while it
elects, for up to ``leader_wait`` seconds). A request that was sent and not
answered may have been acted on: the transport moves on but raises, and only
the caller's retry policy may repeat it (a numbered send carries its producer id
and sequence and is stored once; a half send is not repeated; ``retry``).
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from halfmq.errors import BrokerError, BrokerUnavailable

__all__ = ["LEADER_WAIT", "NOT_LEADER", "Attempt", "BrokerUrls", "Failure", "Route", "failure_of", "next_url", "round_pause", "split_urls"]

NOT_LEADER = "NOT_LEADER"
# How long one call keeps looking for a leader among the set's nodes (421s, nodes that refuse connections): an
# election takes about the set's lease TTL (5 s by default) plus one tick.
LEADER_WAIT = 15.0
_PAUSE_FIRST, _PAUSE_MAX = 0.1, 0.25


def split_urls(spec: str) -> list[str]:
    return [part.strip().rstrip("/") for part in spec.split(",") if part.strip()]


class Failure(enum.Enum):
    """What one attempt's error says about the node it was sent to."""

    NOT_LEADER = "not leader"  # a 421: the node refused the request and did nothing
    UNREACHABLE = "unreachable"  # no connection (refused, connect timeout, certificate): the request never left
    NO_ANSWER = "no answer"  # sent, then no answer in time or a closed connection: it may have been acted on
    ANSWERED = "answered"  # any other answer: the node is alive and spoke for itself

    @property
    def did_nothing(self) -> bool:
        """True when the broker certainly did not act on the request, so any call may be repeated elsewhere."""
        return self in (Failure.NOT_LEADER, Failure.UNREACHABLE)


def failure_of(error: BrokerError) -> Failure:
    if error.code == NOT_LEADER:
        return Failure.NOT_LEADER
    if isinstance(error, BrokerUnavailable):
        return Failure.NO_ANSWER if error.sent else Failure.UNREACHABLE
    return Failure.ANSWERED


def next_url(urls: Sequence[str], asked: str, failure: Failure, leader: str | None = None, suspects: Collection[str] = ()) -> str | None:
    """Where a call goes after ``failure`` on ``asked``; None when it stays (a single URL, or an answer).

    ``leader`` is the URL a 421 named; it is followed when it is listed, is not ``asked`` and is not one of the
    ``suspects``. Otherwise the next listed URL after ``asked`` that is not suspected; when every other one is,
    the named leader, else simply the next one.
    """
    if len(urls) < 2 or failure is Failure.ANSWERED:
        return None
    leader = (leader or "").rstrip("/")
    named = leader if failure is Failure.NOT_LEADER and leader in urls and leader != asked else None
    if named is not None and named not in suspects:
        return named
    start = urls.index(asked) + 1 if asked in urls else 0
    ring = [urls[(start + i) % len(urls)] for i in range(len(urls))]
    others = [u for u in ring if u != asked]
    return next((u for u in others if u not in suspects), named or others[0])


def round_pause(rounds: int) -> float:
    """The pause after the ``rounds``-th round of the set without a leader: short, so an election is seen soon."""
    return min(_PAUSE_MAX, _PAUSE_FIRST * 2.0 ** max(0, rounds - 1))


class BrokerUrls:
    """The listed URLs, the one calls start at, and the nodes suspected of hanging; shared by a transport's calls."""

    def __init__(self, urls: list[str], *, suspect_for: float = 5.0, leader_wait: float = LEADER_WAIT, clock: Callable[[], float] = time.monotonic) -> None:
        if not urls:
            raise ValueError("no broker URL given")
        self.urls = urls
        self.suspect_for = suspect_for
        self.leader_wait = leader_wait
        self.clock = clock
        self._current = 0
        self._suspected_until: dict[str, float] = {}

    @property
    def base(self) -> str:
        return self.urls[self._current]

    def suspects(self) -> set[str]:
        now = self.clock()
        return {url for url, until in self._suspected_until.items() if until > now}

    def redirect(self, error: BrokerError, asked: str) -> str | None:
        """After ``error`` from ``asked``: the node to repeat the call at now, or None (the error is the caller's).

        Either way the calls that follow start where ``next_url`` says (unless another call moved them already).
        """
        failure = failure_of(error)
        if failure in (Failure.UNREACHABLE, Failure.NO_ANSWER):
            self._suspected_until[asked] = self.clock() + self.suspect_for
        target = next_url(self.urls, asked, failure, str(error.extra.get("leader_url") or ""), self.suspects())
        if target is None:
            return None
        if self.base == asked:
            self._current = self.urls.index(target)
        return target if failure.did_nothing else None

    def moved(self, hung: str, leader: str) -> None:
        """``leader`` answers as the set's leader while ``hung`` keeps a call waiting: suspect it, start calls there."""
        self._suspected_until[hung] = self.clock() + self.suspect_for
        self._current = self.urls.index(leader)

    def route(self) -> Route:
        return Route(self)


@dataclass(frozen=True, slots=True)
class Attempt:
    """Send the call to ``url``, after pausing ``wait`` seconds."""

    url: str
    wait: float = 0.0


class Route:
    """One call's walk over the set: where it is sent first, and where (and after what pause) after each failure.

    The transport drives it: ``first``, then ``after`` each failed attempt until it answers None.
    """

    def __init__(self, urls: BrokerUrls) -> None:
        self._urls = urls
        self._until = urls.clock() + urls.leader_wait
        self._round: set[str] = set()  # nodes asked since the last pause
        self._named: set[str] = set()  # leaders a 421 named since the last pause
        self._refused = False  # a node of this round answered 421: the set is up and has (or elects) a leader
        self._rounds = 0

    def first(self) -> Attempt:
        return Attempt(self._urls.base)

    def after(self, error: BrokerError, asked: str) -> Attempt | None:
        """The next attempt after ``error`` from ``asked``; None: raise ``error`` (the caller may retry)."""
        target = self._urls.redirect(error, asked)
        if target is None:
            return None
        self._round.add(asked)
        self._refused = self._refused or failure_of(error) is Failure.NOT_LEADER
        named = target == str(error.extra.get("leader_url") or "").rstrip("/")
        wait = 0.0
        if target in self._round and not (named and target not in self._named):
            # Every node asked once and none took the call (a leader named for the first time is asked at once).
            if not self._refused:
                return None  # none could even be reached: the set is down, not electing
            self._rounds += 1
            wait = round_pause(self._rounds)
            self._round, self._named, self._refused = set(), set(), False
        if named:
            self._named.add(target)
        if self._urls.clock() + wait > self._until:
            return None
        return Attempt(target, wait)
