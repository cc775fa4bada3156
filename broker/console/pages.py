"""The console's routes: pages, their polled fragments, actions, login. Thin: the use cases read and act.

Each page is ``/console/{page}``; its table is ``/console/{page}/fragment``,
which htmx polls every few seconds (no manual reload) and which every action
answers with, so a click shows its result at once. Destructive actions carry
``hx-confirm``. Not in the OpenAPI document: these are HTML pages, not the API.

Every name a template puts into a URL goes through the ``segment`` filter (one
percent-encoded path segment: a stored name with a backslash, ``..``, ``#`` or ``?``
cannot steer a button at another resource), and every answer forbids framing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.routing import APIRoute
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup

from halfmq import human_time, wire
from halfmq.broker.security.access import ClusterAdmin
from halfmq.broker.usecases import Served, UseCases
from halfmq.broker.usecases.console_views import Rates
from halfmq.errors import AccessDenied, BrokerError, InvalidOffsetReset, InvalidRetention, Unauthenticated

from . import session
from .follower import NO_FRAMING, PREFIX, follower_banner

HERE = Path(__file__).parent
STATIC_DIR = HERE / "static"
POLL_SECONDS = 2


def path_segment(value: object) -> str:
    """``value`` as one URL path segment: everything but letters, digits and ``_.-~`` percent-encoded, ``/`` included.

    (Jinja's own ``urlencode`` keeps ``/``.) A browser still resolves a segment that is exactly ``.`` or ``..``
    (even as ``%2e``): such a name, written by a broker older than the name rule, lands on no route.
    """
    return quote(str(value), safe="")


_env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(["html"]))
_env.filters["segment"] = path_segment
_env.filters["ago"] = human_time.when
_env.filters["duration"] = human_time.duration
_env.filters["due"] = human_time.due


class ConsoleRoute(APIRoute):
    """Every console answer (pages, fragments, redirects, refusals) says it may not be framed: no clickjacking of
    its buttons, no page elsewhere showing it."""

    def get_route_handler(self) -> Callable[[Request], Any]:
        handler = super().get_route_handler()

        async def not_framed(request: Request) -> Response:
            response = await handler(request)
            response.headers.update(NO_FRAMING)
            return response

        return not_framed


router = APIRouter(prefix="/console", include_in_schema=False, route_class=ConsoleRoute)


@dataclass(frozen=True)
class Viewer:
    """Who looks at a page (the session's ``ClusterAdmin`` grant) and what its pages read with: the use cases of the
    moment (a set's node swaps them when its role changes) and the rows a page shows."""

    admin: ClusterAdmin
    usecases: UseCases
    rows: int


Reader = Callable[[Request, Viewer], Any]
PAGES: dict[str, tuple[str, Reader]] = {}
ON_FOLLOWER: set[str] = set()  # the pages a set's follower renders: their data is in its log, up to the leader's mark
# Served on every node besides those pages (and the static files): none of them reads or changes the broker's state.
EVERY_NODE = frozenset({("GET", PREFIX), ("GET", f"{PREFIX}/login"), ("POST", f"{PREFIX}/login"), ("POST", f"{PREFIX}/logout")})


def _page(name: str, title: str, on_follower: bool = False) -> Callable[[Reader], Reader]:
    def register(read: Reader) -> Reader:
        PAGES[name] = (title, read)
        if on_follower:
            ON_FOLLOWER.add(name)
        return read
    return register


def served_on_follower(method: str, path: str) -> bool:
    """Whether a set's node that does not lead serves this console request: an ``on_follower`` page or its fragment (GET),
    the home, login and logout, the static files. Every action is a POST, and answers the page naming the leader."""
    if (method, path) in EVERY_NODE or (method == "GET" and path.startswith(f"{PREFIX}/static/")):
        return True
    parts = path.split("/")  # "", "console", page[, "fragment"]
    return (method == "GET" and len(parts) in (3, 4) and parts[2] in ON_FOLLOWER
            and (len(parts) == 3 or parts[3] == "fragment"))


def _number(request: Request, name: str) -> int | None:
    """A query parameter that must be a count (a page, an offset); None when absent or malformed (a read changes nothing)."""
    value = request.query_params.get(name, "")
    return int(value) if value.isdigit() and len(value) < 19 else None


def _page_number(request: Request) -> int:
    """``?page=N`` (from 1): which page of a listing; malformed, the first."""
    return _number(request, "page") or 1


def _query(request: Request) -> str:
    return request.query_params.get("q", "").strip()[:256]


@_page("transactions", "Transactions")
def _transactions(request: Request, viewer: Viewer) -> Any:
    return viewer.usecases.console_views.transactions(viewer.admin, _page_number(request), viewer.rows)


@_page("transactional-ids", "Transactional ids")
def _tids(request: Request, viewer: Viewer) -> Any:
    return viewer.usecases.console_views.transactional_ids(viewer.admin, _page_number(request), viewer.rows)


@_page("topics", "Topics", on_follower=True)
def _topics(request: Request, viewer: Viewer) -> Any:
    """``?q=`` the topics whose name contains it."""
    rates = getattr(request.app.state, "console_rates", None)
    if rates is None:
        rates = request.app.state.console_rates = Rates()
    return viewer.usecases.console_views.topics(viewer.admin, rates, _page_number(request), viewer.rows, _query(request))


# What a page's polled fragment asks for again, so polling keeps the reader's place.
PAGE_PARAMS = ("page", "q", "dlq_group", "dlq_offset", "topic")


@_page("groups", "Consumer groups")
def _groups(request: Request, viewer: Viewer) -> Any:
    """``?q=`` the groups whose name contains it; ``?dlq_group=G&dlq_offset=N`` pages G's dead letters."""
    offset = _number(request, "dlq_offset")
    group = request.query_params.get("dlq_group")
    return viewer.usecases.console_views.groups(viewer.admin, _page_number(request), viewer.rows, _query(request),
                                                {group: offset} if group and offset is not None else {})


@_page("messages", "Messages")
async def _messages(request: Request, viewer: Viewer) -> Any:
    """``?q=`` a message id (its journey) or a key (the messages sent with it, newest first); ``&topic=`` its topic."""
    return await viewer.usecases.journeys.console_search(viewer.admin, _query(request),
                                                         request.query_params.get("topic", "").strip()[:256])


@_page("producers", "Producers")
def _producers(request: Request, viewer: Viewer) -> Any:
    return viewer.usecases.console_views.producers(viewer.admin, _page_number(request), viewer.rows)


@_page("cluster", "Broker set", on_follower=True)
async def _cluster(request: Request, viewer: Viewer) -> Any:
    """This node's view of its set, the one GET /v1/cluster answers (a snapshot, as its wire struct); else this one node."""
    node = getattr(request.app.state, "cluster", None)
    if node is None:
        return viewer.usecases.console_views.single_node(viewer.admin)
    return {"cluster": wire.decode(await node.view(), wire.ClusterView), "single": False}


def runtime_of(request: Request) -> Served:
    """The broker this console serves, as the composition root put it on the app (a set's node swaps it)."""
    served: Served = request.app.state.runtime
    return served


def _who(request: Request) -> Viewer:
    """The session's viewer once ``Access`` said its token may administer the broker (Unauthenticated / AccessDenied)."""
    rt = runtime_of(request)
    admin = session.admin(rt.access, request.scope, session.cookie_token(request.scope))
    return Viewer(admin, rt.usecases, rt.settings.console_page_rows)


async def _render(request: Request, viewer: Viewer, name: str, template: str, flash: str | None = None,
                  status: int = 200) -> HTMLResponse:
    """Read the page's data on the event loop (one page of rows: bounded), then write its HTML in a worker thread, on
    that data only: the template's work, however many rows, holds no request up."""
    title, read = PAGES[name]
    data = read(request, viewer)
    if hasattr(data, "__await__"):
        data = await data
    token = session.cookie_token(request.scope)
    context = dict(
        page=name, title=title, pages=[(k, v[0]) for k, v in PAGES.items()], data=data, flash=flash,
        params=[(k, v) for k, v in request.query_params.items() if k in PAGE_PARAMS],
        csrf=session.csrf_token(token), poll=POLL_SECONDS, auth=runtime_of(request).access.enabled,
        follower=_banner(request, name), disk=viewer.usecases.console_views.disk(viewer.admin))
    html = await asyncio.to_thread(_env.get_template(template).render, context)
    return HTMLResponse(html, status_code=status)


def _banner(request: Request, page: str) -> Markup | None:
    """On a set's follower, the banner naming the leader (its HTML escaped by ``follower_banner``)."""
    html = follower_banner(request.app.state, f"{PREFIX}/{page}")
    return Markup(html) if html is not None else None  # every value in it went through html.escape


def _refused(request: Request, exc: BrokerError) -> Response:
    if isinstance(exc, Unauthenticated):
        return RedirectResponse("/console/login", status_code=303)
    return HTMLResponse(_env.get_template("refused.html").render(detail=exc.detail, title="Refused"), status_code=exc.status)


@router.get("")
async def console_home(request: Request) -> RedirectResponse:
    """The transactions; on a set's follower, which does not render them, the Broker set."""
    first = "cluster" if follower_banner(request.app.state, PREFIX) is not None else "transactions"
    return RedirectResponse(f"{PREFIX}/{first}", status_code=303)


@router.get("/login")
async def login_form(request: Request) -> HTMLResponse:
    return HTMLResponse(_env.get_template("login.html").render(title="Log in", error=None))


@router.post("/login")
async def login(request: Request) -> Response:
    form = parse_qs((await request.body()).decode("utf-8", "replace"))
    token = (form.get("token") or [""])[0].strip()
    try:
        session.admin(runtime_of(request).access, request.scope, token or None)
    except (Unauthenticated, AccessDenied) as exc:
        html = _env.get_template("login.html").render(title="Log in", error=exc.detail)
        return HTMLResponse(html, status_code=exc.status)
    answer = RedirectResponse(PREFIX, status_code=303)  # the home page: the transactions, on a follower the Broker set
    answer.set_cookie(session.COOKIE, token, httponly=True, samesite="strict", path="/console",
                      secure=request.url.scheme == "https")
    return answer


@router.post("/logout")
async def logout(request: Request) -> Response:
    answer = RedirectResponse("/console/login", status_code=303)
    answer.delete_cookie(session.COOKIE, path="/console")
    return answer


@router.get("/{page}")
async def page(page: str, request: Request) -> Response:
    return await _shown(request, page, "page.html")


@router.get("/{page}/fragment")
async def fragment(page: str, request: Request) -> Response:
    """The page's table alone: what htmx polls to refresh it."""
    return await _shown(request, page, f"{page}.html")


async def _shown(request: Request, page: str, template: str) -> Response:
    if page not in PAGES:
        return HTMLResponse("no such page", status_code=404)
    try:
        viewer = _who(request)
    except (Unauthenticated, AccessDenied) as exc:
        return _refused(request, exc)
    return await _render(request, viewer, page, template)


Action = Callable[[Viewer], Any]  # may answer a line for the flash (a plan, a count) instead of the route's own


async def _act(request: Request, page: str, action: Action, done: str) -> Response:
    """Check the session and the CSRF token, act, and answer with the page's refreshed table."""
    try:
        viewer = _who(request)
    except (Unauthenticated, AccessDenied) as exc:
        return _refused(request, exc)
    if not session.csrf_ok(session.cookie_token(request.scope), request.headers.get("x-csrf-token")):
        return HTMLResponse("missing or wrong CSRF token: reload the page", status_code=403)
    try:
        result = action(viewer)
        if hasattr(result, "__await__"):
            result = await result
        flash = result if isinstance(result, str) else done
    except BrokerError as exc:
        flash = f"refused: {exc.code}: {exc.detail}"
    return await _render(request, viewer, page, f"{page}.html", flash=flash)


@router.post("/transactions/{transaction_id}/{verb}")
async def transaction_action(transaction_id: str, verb: str, request: Request) -> Response:
    async def commit(viewer: Viewer) -> None:
        await viewer.usecases.operator_actions.end_now(viewer.admin, transaction_id, "commit")

    async def rollback(viewer: Viewer) -> None:
        await viewer.usecases.operator_actions.end_now(viewer.admin, transaction_id, "rollback")

    def recheck(viewer: Viewer) -> None:
        viewer.usecases.operator_actions.recheck_now(viewer.admin, transaction_id)

    async def resend(viewer: Viewer) -> None:
        await viewer.usecases.operator_actions.resend_now(viewer.admin, transaction_id, "operator (console)")

    actions: dict[str, Action] = {"commit": commit, "rollback": rollback, "recheck": recheck, "resend": resend}
    if verb not in actions:
        return HTMLResponse("no such action", status_code=404)
    return await _act(request, "transactions", actions[verb], f"{verb}: {transaction_id}")


@router.post("/groups/{group}/dlq/{offset}/resend")
async def dlq_resend(group: str, offset: int, request: Request) -> Response:
    async def resend(viewer: Viewer) -> None:
        await viewer.usecases.groups.resend_dlq_now(viewer.admin, group, offset)

    return await _act(request, "groups", resend, f"resent DLQ message {offset} of {group}")


@router.post("/transactional-ids/{tid}/abort")
async def tid_abort(tid: str, request: Request) -> Response:
    async def abort(viewer: Viewer) -> None:
        await viewer.usecases.producer_transactions.abort_now(viewer.admin, tid)

    return await _act(request, "transactional-ids", abort, f"aborted the open transaction of {tid}")


async def _form(request: Request) -> dict[str, str]:
    """The posted form's fields, the first value of each (the broker's body limit bounds it, as every request's)."""
    return {name: values[0] for name, values in parse_qs((await request.body()).decode("utf-8", "replace")).items()}


@router.post("/topics/{topic}/delete")
async def topic_delete(topic: str, request: Request) -> Response:
    force = (await _form(request)).get("force") == "1"

    async def delete(viewer: Viewer) -> str:
        gone = await viewer.usecases.topics.delete_now(topic, force)
        return (f"deleted topic {topic}" + (f" ({gone.pending_halves} pending halves and {gone.in_flight} deliveries in "
                                            "flight dropped)" if gone.pending_halves or gone.in_flight else ""))

    return await _act(request, "topics", delete, f"deleted topic {topic}")


@router.post("/topics/retention")
async def topic_retention(request: Request) -> Response:
    """The form's ``topic``, ``retention`` (a duration such as ``12h``) and ``retention_bytes`` (per queue): what
    ``PATCH /v1/topics/{topic}`` changes (``ManageTopics.alter``); a field left blank stays, ``broker`` puts the broker's
    limit back."""
    form = await _form(request)
    topic = form.get("topic", "").strip()

    async def alter(viewer: Viewer) -> str:
        done = await viewer.usecases.topics.alter_now(topic, retention_change(form.get("retention", ""),
                                                                              form.get("retention_bytes", "")))
        age = "the broker's" if done.retention_ms is None else human_time.duration(done.retention_ms / 1000)
        size = "the broker's" if done.retention_bytes is None else f"{done.retention_bytes} bytes a queue"
        return f"retention of {done.name}: {age} by age, {size} by size"

    return await _act(request, "topics", alter, f"changed the retention of {topic}")


def retention_change(retention: str, retention_bytes: str) -> wire.TopicAlter:
    """The console form's fields as the API's PATCH body: blank leaves a limit, ``broker`` puts the broker's back, a
    duration (``12h``, ``7d``) or a count of bytes sets it; InvalidRetention when one does not read (nothing changed)."""
    fields: dict[str, int | None] = {}
    for name, value, read in (("retention_ms", retention.strip(), human_time.retention_ms),
                              ("retention_bytes", retention_bytes.strip(), human_time.retention_bytes)):
        if not value:
            continue
        try:
            fields[name] = read(human_time.BROKERS if value.lower() == human_time.BROKERS else value)  # (any case here)
        except ValueError:
            raise InvalidRetention(f"{name}: {value[:64]!r} does not read as "
                                   f"{'a duration such as 12h' if name == 'retention_ms' else 'a count of bytes'}, "
                                   "or 'broker'") from None
    return wire.TopicAlter(**fields)  # type: ignore[arg-type]  # the fields the form named


@router.post("/groups/{group}/delete")
async def group_delete(group: str, request: Request) -> Response:
    force = (await _form(request)).get("force") == "1"

    async def delete(viewer: Viewer) -> str:
        gone = await viewer.usecases.groups.delete_group_now(viewer.admin, group, force)
        return f"deleted consumer group {group} (its offsets on {len(gone.topics)} topics)"

    return await _act(request, "groups", delete, f"deleted consumer group {group}")


@router.post("/groups/reset")
async def group_reset(request: Request) -> Response:
    """The form's ``group``, ``topic``, ``to`` (earliest, latest, duration, timestamp, offset) and ``value`` (``1h``, an
    ISO time in UTC, an offset); ``dry_run=1`` only shows the plan in the flash."""
    form = await _form(request)
    group = form.get("group", "").strip()

    async def reset(viewer: Viewer) -> str:
        body = reset_request(form.get("to", ""), form.get("value", ""), dry_run=form.get("dry_run") == "1",
                             force=form.get("force") == "1")
        done = await viewer.usecases.groups.reset_offsets_now(viewer.admin, group, form.get("topic", ""), body)
        moves = ", ".join(f"q{q.queue_id} {q.from_offset}→{q.to_offset}" for q in done.queues) or "no queue"
        return f"{'plan (dry run)' if not done.applied else 'reset'} of {group} on {done.topic} to {done.to}: {moves}"

    return await _act(request, "groups", reset, f"reset {group}")


@router.post("/messages/recall")
async def message_recall(request: Request) -> Response:
    """The form's ``topic`` and ``recall_handle``: the timed message it names is never delivered (RECALL_TOO_LATE once
    due; a second recall answers that it was recalled already)."""
    form = await _form(request)

    async def recall(viewer: Viewer) -> str:
        done = await viewer.usecases.sending.recall_now(viewer.admin, form.get("topic", "").strip(),
                                                        form.get("recall_handle", "").strip())
        return f"recalled {done.msg_id} on {done.topic}" + (" (it was recalled already)" if done.duplicate else "")

    return await _act(request, "messages", recall, "recalled")


@router.post("/groups/{group}/redrive")
async def group_redrive(group: str, request: Request) -> Response:
    def start(viewer: Viewer) -> str:
        job = viewer.usecases.groups.start_redrive_now(viewer.admin, group, None, None)
        return f"redriving {job.total} dead letters of {group} at {job.rate_per_second:g}/s"

    return await _act(request, "groups", start, f"redriving {group}'s DLQ")


@router.post("/groups/{group}/redrive/stop")
async def group_redrive_stop(group: str, request: Request) -> Response:
    def stop(viewer: Viewer) -> str:
        job = viewer.usecases.groups.stop_redrive_now(viewer.admin, group)
        return f"stopped the redrive of {group}'s DLQ after {job.resent} of {job.total}"

    return await _act(request, "groups", stop, f"stopped the redrive of {group}'s DLQ")


def reset_request(to: str, value: str, *, dry_run: bool, force: bool) -> wire.ResetOffsetsRequest:
    """The console form's reset as the API's request: ``value`` read by ``to`` (a duration such as ``1h``, an ISO time,
    taken as UTC unless it names its zone, or an offset); InvalidOffsetReset when it does not read."""
    value = value.strip()
    try:
        if to == "duration":
            fields: dict[str, Any] = {"ago_ms": int(human_time.parse_duration(value) * 1000)}
        elif to == "timestamp":
            fields = {"timestamp_ms": human_time.epoch_ms(value)}
        elif to == "offset":
            fields = {"offset": int(value)}
        else:
            fields = {}
        return wire.decode({"to": to, "dry_run": dry_run, "force": force, **fields}, wire.ResetOffsetsRequest)
    except ValueError as exc:
        raise InvalidOffsetReset(f"reset to {to!r} with {value!r}: {exc}") from None
