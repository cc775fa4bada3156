"""A throwaway certificate authority and a server certificate for 127.0.0.1/localhost, made with the openssl CLI."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


@dataclass(frozen=True)
class TlsFiles:
    ca: Path
    cert: Path
    key: Path


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def make_ca_and_server_cert(directory: Path) -> TlsFiles:
    directory.mkdir(parents=True, exist_ok=True)
    _openssl("req", "-x509", *EC, "-keyout", "ca.key", "-out", "ca.pem", "-days", "1", "-subj", "/CN=halfmq test CA",
             "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=directory)
    _openssl("req", *EC, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost", cwd=directory)
    (directory / "server.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "server.pem",
             "-days", "1", "-extfile", "server.ext", cwd=directory)
    return TlsFiles(directory / "ca.pem", directory / "server.pem", directory / "server.key")
