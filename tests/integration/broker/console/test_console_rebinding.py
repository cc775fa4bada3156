"""DNS rebinding and framing, in a real Chromium against a real loopback broker with auth off.

Chromium is told that ``rebind.example`` resolves to 127.0.0.1 (what a rebinding
DNS server answers on its second lookup): a page there must not get the console,
whose CSRF token would let it force-commit. A page elsewhere must not frame the
console either (``frame-ancestors 'none'``, ``X-Frame-Options: DENY``).
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from .chromium import (
    start_chromium,
    wait_for_css,
    wait_until,
)
from .test_console_in_chromium import half


@pytest.fixture
def rebinding_browser(tmp_path):
    driver = start_chromium(tmp_path / "chromium-profile", "--host-resolver-rules=MAP rebind.example 127.0.0.1")
    yield driver
    driver.quit()


def test_a_page_on_a_rebinding_name_gets_no_console_and_the_loopback_name_does(start_broker, rebinding_browser) -> None:
    broker = start_broker()
    client = httpx.Client(base_url=broker.url, timeout=15)
    client.post("/v1/topics", json={"name": "ORDERS", "queues": 1}).raise_for_status()
    txid = half(client, "pg", "order 42 paid")

    rebinding_browser.get(f"http://rebind.example:{broker.port}/console/transactions")
    wait_until(lambda: "HOST_NOT_ALLOWED" in rebinding_browser.page_source, 10, "the broker's refusal")
    assert "X-CSRF-Token" not in rebinding_browser.page_source and txid not in rebinding_browser.page_source

    rebinding_browser.get(f"http://localhost:{broker.port}/console/transactions")
    wait_for_css(rebinding_browser, f'#pending tr[data-transaction="{txid}"]')
    client.close()


@pytest.fixture
def framing_site():
    """Another origin (localhost on another port) serving one page that frames what ``framing_site.frame`` names."""
    page: dict[str, bytes] = {}

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = page["html"]
            self.send_response(200)
            self.send_header("content-type", "text/html")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    def frame(url: str) -> str:
        page["html"] = f'<iframe id="console" src="{url}" width="800" height="600"></iframe>'.encode()
        return f"http://localhost:{server.server_address[1]}/"

    yield frame
    server.shutdown()
    server.server_close()


def test_a_page_elsewhere_cannot_frame_the_console(start_broker, rebinding_browser, framing_site) -> None:
    broker = start_broker()
    rebinding_browser.get(framing_site(f"{broker.url}/console/transactions"))
    frame = rebinding_browser.find_element("css selector", "iframe#console")
    rebinding_browser.switch_to.frame(frame)
    try:
        wait_until(lambda: rebinding_browser.execute_script("return location.href") != "about:blank", 10, "the frame to navigate")
        wait_until(lambda: rebinding_browser.execute_script("return document.readyState") == "complete", 10, "the frame to settle")
        landed = rebinding_browser.execute_script("return location.href")
        assert not rebinding_browser.find_elements("css selector", "#pending"), f"the console rendered inside another page's frame ({landed})"
        assert landed.startswith("chrome-error://"), landed  # Chromium's page for a refused frame
    finally:
        rebinding_browser.switch_to.default_content()
