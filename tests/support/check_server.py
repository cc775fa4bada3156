"""A real HTTP server standing in for a producer's check-back endpoint.

Tests set how it answers (a state, a status, garbage, a hang) and read what it was asked.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class CheckServer:
    def __init__(self) -> None:
        self.calls: list[dict] = []
        self.closing = threading.Event()  # ends a hang: the answers held past the broker's timeout go out at close
        self.answer: Callable[[dict], tuple[int, bytes]] = lambda req: (200, b'{"state": "unknown"}')
        self.headers: dict[str, str] = {}  # sent with every answer besides content-type and -length (a redirect's location)
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                request = json.loads(self.rfile.read(length))
                server.calls.append(request)
                status, body = server.answer(request)
                if status == 0:  # hang past the broker's timeout (its check_timeout), until closed or 5 s
                    server.closing.wait(5)
                    status, body = 200, b'{"state": "commit"}'
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                for name, value in server.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/halfmq/check"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    def answer_state(self, state: str) -> None:
        self.answer = lambda req: (200, json.dumps({"state": state}).encode())

    def calls_for(self, transaction_id: str) -> list[dict]:
        return [c for c in self.calls if c["transaction_id"] == transaction_id]

    def close(self) -> None:
        self.closing.set()
        self._httpd.shutdown()
        self._httpd.server_close()
