"""A throwaway PostgreSQL cluster for the tests and the benchmarks, from Debian's package.

initdb and postgres refuse to run as root (CI runs as root), so the cluster is
owned by and run as the ``postgres`` user, in a temp dir, on a free port.
The tests' cluster skips fsync (nothing of it must survive a crash); the
benchmarks ask for a ``durable`` one, so that a PostgreSQL figure pays for its
commits as the SQLite one (``synchronous=FULL``) does.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from .child_process import free_port


def _bin_dir() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if found:
        return Path(found[-1]).parent
    pg_ctl = shutil.which("pg_ctl")
    if pg_ctl:
        return Path(pg_ctl).resolve().parent
    raise RuntimeError("PostgreSQL server binaries not found: run bin/test, which installs Debian's postgresql package")


class PostgresCluster:
    def __init__(self) -> None:
        self.bin = _bin_dir()
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="halfmq-pg-"))
        self.data = self.root / "data"
        self.socket_dir = self.root / "sock"
        self._as_postgres = os.geteuid() == 0

    def _run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        cmd = list(argv)
        if self._as_postgres:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        return subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=120)

    def start(self, durable: bool = False) -> PostgresCluster:
        self.socket_dir.mkdir(parents=True)
        if self._as_postgres:
            shutil.chown(self.root, "postgres", "postgres")
            shutil.chown(self.socket_dir, "postgres", "postgres")
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
        durability = "" if durable else "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
        options = f"-p {self.port} -k {self.socket_dir} -c listen_addresses=127.0.0.1 {durability}-c max_connections=200"
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-o", options, "-l", str(self.root / "server.log"), "-w", "-t", "60", "start")
        return self

    def create_database(self, name: str) -> str:
        self._run(str(self.bin / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", name)
        return self.url(name)

    def drop_database(self, name: str) -> None:
        self._run(str(self.bin / "dropdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "--if-exists", "--force", name)

    def url(self, database: str, driver: str = "postgresql+psycopg") -> str:
        return f"{driver}://postgres@127.0.0.1:{self.port}/{database}"

    def stop(self) -> None:
        try:
            self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")
        except subprocess.CalledProcessError:
            pass
        shutil.rmtree(self.root, ignore_errors=True)
