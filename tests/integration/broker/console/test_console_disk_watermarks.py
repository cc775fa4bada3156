"""The console's header shows the data dir's disk against its watermarks, in a real Chromium against a real broker.

Marks below what the real disk holds put the broker past both from its first reading: every page says sends are
refused; with the marks off (the test brokers', tests/conftest.py) it shows only the used share.
"""

from __future__ import annotations

from .chromium import wait_for_css


def test_every_page_says_when_the_disk_is_past_the_refuse_sends_mark(start_broker, browser) -> None:
    broker = start_broker({"HALFMQ_BROKER_DISK_EARLY_DELETE_RATIO": "0.0001", "HALFMQ_BROKER_DISK_REFUSE_SENDS_RATIO": "0.0002"})
    for page in ("topics", "groups"):
        browser.get(f"{broker.url}/console/{page}")
        wait_for_css(browser, '#disk[data-level="refuse_sends"]')
        said = browser.execute_script("return document.querySelector('#disk').innerText")
        assert "sends are refused" in said and "used" in said, said


def test_under_both_marks_the_header_shows_only_the_used_share(start_broker, browser) -> None:
    broker = start_broker()  # the test brokers' marks are 1 (tests/conftest.py): never passed
    browser.get(f"{broker.url}/console/topics")
    wait_for_css(browser, '#disk[data-level="ok"]')
    said = browser.execute_script("return document.querySelector('#disk').innerText")
    assert said.startswith("disk ") and said.endswith("% used"), said
