"""A small TCP proxy in front of the broker that loses answers: the request reaches the broker, its answer never
comes back (the connection is closed instead), for the first ``drops`` requests whose path contains ``match``."""

from __future__ import annotations

import socket
import threading


class LossyProxy:
    def __init__(self, upstream_port: int, match: str, drops: int = 1) -> None:
        self.upstream_port, self.match, self.drops = upstream_port, match.encode(), drops
        self.dropped = 0
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            except OSError:  # nothing listens upstream (a follower's Kafka port): refused as the port itself would be
                _close(client)
                continue
            last_request = [b""]
            threading.Thread(target=self._to_upstream, args=(client, upstream, last_request), daemon=True).start()
            threading.Thread(target=self._to_client, args=(upstream, client, last_request), daemon=True).start()

    def _to_upstream(self, client: socket.socket, upstream: socket.socket, last_request: list[bytes]) -> None:
        try:
            while data := client.recv(65536):
                if data[:5] in (b"POST ", b"GET /", b"PUT /"):
                    last_request[0] = data.split(b"\r\n", 1)[0]
                upstream.sendall(data)
        except OSError:
            pass
        finally:
            _close(upstream)

    def _to_client(self, upstream: socket.socket, client: socket.socket, last_request: list[bytes]) -> None:
        try:
            while data := upstream.recv(65536):
                with self._lock:
                    drop = self.match in last_request[0] and self.dropped < self.drops
                    if drop:
                        self.dropped += 1
                if drop:  # the broker has answered: the client never hears it
                    break
                client.sendall(data)
        except OSError:
            pass
        finally:
            _close(client)
            _close(upstream)

    def close(self) -> None:
        self._closed = True
        _close(self._server)


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
