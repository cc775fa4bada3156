import aiohttp

from halfmq.aiohttp_session import LoopSession


def made() -> tuple[LoopSession, list[aiohttp.ClientSession]]:
    sessions: list[aiohttp.ClientSession] = []

    def make() -> aiohttp.ClientSession:
        sessions.append(aiohttp.ClientSession())
        return sessions[-1]

    return LoopSession(make), sessions


def test_nothing_is_made_before_the_first_use() -> None:
    holder, sessions = made()
    assert not holder.opened and sessions == []


async def test_the_first_use_makes_the_session_and_later_ones_reuse_it() -> None:
    holder, sessions = made()
    try:
        assert holder.get() is holder.get() and len(sessions) == 1 and holder.opened
    finally:
        await holder.aclose()


async def test_a_close_closes_it_once_and_a_later_use_makes_a_new_one() -> None:
    holder, sessions = made()
    first = holder.get()
    await holder.aclose()
    await holder.aclose()
    assert first.closed and not holder.opened
    second = holder.get()
    try:
        assert second is not first and not second.closed and len(sessions) == 2
    finally:
        await holder.aclose()


async def test_a_session_closed_behind_its_holders_back_is_made_again() -> None:
    holder, sessions = made()
    await holder.get().close()
    try:
        assert not holder.get().closed and len(sessions) == 2
    finally:
        await holder.aclose()
