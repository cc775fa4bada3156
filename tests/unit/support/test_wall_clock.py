"""What the lint against wall-clock waits in unit tests (tests/support/wall_clock.py) finds, and what it lets through."""

from __future__ import annotations

from pathlib import Path

from tests.support.wall_clock import unit_test_files, unit_test_waits, waits_in


def lines_found(source: str) -> list[int]:
    return [wait.line for wait in waits_in(source)]


def test_a_sleep_is_found_however_it_was_imported() -> None:
    assert lines_found("import time\ntime.sleep(0.1)\n") == [2]
    assert lines_found("from time import sleep\nsleep(1)\n") == [2]
    assert lines_found("import asyncio as aio\nasync def f():\n    await aio.sleep(0.01)\n") == [3]
    assert lines_found("from asyncio import sleep as nap\nasync def f(d):\n    await nap(d)\n") == [3]


def test_a_yield_of_the_loop_is_not_a_wait_but_a_sleep_of_any_other_length_is() -> None:
    assert lines_found("import asyncio\nasync def f():\n    await asyncio.sleep(0)\n") == []
    assert lines_found("import asyncio\nasync def f(delay):\n    await asyncio.sleep(delay)\n") == [3]
    assert lines_found("import asyncio\nasync def f():\n    await asyncio.sleep(0.0)\n") == []


def test_a_loop_until_a_time_is_found() -> None:
    source = "import time\ndeadline = time.monotonic() + 10\nwhile time.monotonic() < deadline:\n    pass\n"
    assert lines_found(source) == [3]
    assert lines_found("import time\nwhile not done():\n    step()\n") == []


def test_an_exception_says_why_on_its_line() -> None:
    assert lines_found("import time\ntime.sleep(1)  # wall-clock: a real process needs a second\n") == []
    assert lines_found("import time\ntime.sleep(1)  # wall-clock:\n") == [2]
    assert lines_found("import time\ntime.sleep(\n    1,  # wall-clock: said on any line of the call\n)\n") == []


def test_the_support_modules_a_unit_test_reaches_are_looked_at_and_the_others_are_not(tmp_path: Path) -> None:
    (tmp_path / "tests" / "unit").mkdir(parents=True)
    (tmp_path / "tests" / "support").mkdir()
    (tmp_path / "tests" / "unit" / "test_a.py").write_text("from tests.support.helper import ready\n")
    (tmp_path / "tests" / "support" / "helper.py").write_text("from .waiting import ready\n")
    (tmp_path / "tests" / "support" / "waiting.py").write_text("import time\ndef ready():\n    time.sleep(0.2)\n")
    (tmp_path / "tests" / "support" / "processes.py").write_text("import time\ntime.sleep(5)\n")
    assert [str(w) for w in unit_test_waits(tmp_path)] == ["tests/support/waiting.py:3: time.sleep(0.2)"]
    assert {p.name for p in unit_test_files(tmp_path)} == {"test_a.py", "helper.py", "waiting.py"}
