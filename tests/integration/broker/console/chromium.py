"""Debian's chromium driven by Selenium through Debian's chromedriver (bin/setup installs both)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--window-size=1400,900")


def require_chromium() -> None:
    """Skip on a machine without Chromium, but never in CI: bin/setup installs it there."""
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        if os.environ.get("CI"):
            pytest.fail("chromium / chromedriver missing: bin/setup installs Debian's chromium and chromium-driver")
        pytest.skip("bin/setup installs Debian's chromium and chromium-driver")


def start_chromium(profile: Path, *extra_flags: str) -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    require_chromium()
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (*FLAGS, *extra_flags):
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    return webdriver.Chrome(options=options, service=Service(executable_path=str(CHROMEDRIVER)))


def click_and_confirm(driver: Any, css: str, timeout: float = 10) -> str:
    """Click a console button (the page re-renders every 2 s: retry a stale one) and accept its confirm dialog.

    Returns the dialog's text, so a test can say what the operator was asked.
    """
    from selenium.common.exceptions import NoAlertPresentException, StaleElementReferenceException
    from selenium.webdriver.common.by import By

    deadline = time.monotonic() + timeout
    while True:
        try:
            driver.find_element(By.CSS_SELECTOR, css).click()
            break
        except StaleElementReferenceException:
            if time.monotonic() > deadline:
                raise
    while True:
        try:
            alert = driver.switch_to.alert
            text = alert.text
            alert.accept()
            return text
        except NoAlertPresentException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def wait_for_css(driver: Any, css: str, timeout: float = 15, present: bool = True) -> None:
    from selenium.webdriver.common.by import By

    wait_until(lambda: bool(driver.find_elements(By.CSS_SELECTOR, css)) is present, timeout, f"{css} {'present' if present else 'gone'}")


def wait_until(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)
