"""The ``halfmq`` console script: one subcommand per component."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from halfmq import __version__

if TYPE_CHECKING:  # the commands import their component when run: `halfmq --help` stays fast
    from halfmq.broker.config import BrokerSettings
    from halfmq.broker.runtime import BrokerRuntime


def _configure_logging(level: str) -> None:
    logging.basicConfig(
        level=level.upper(),
        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    for chatty in ("httpx", "httpcore"):  # one INFO line per request drowns everything else
        logging.getLogger(chatty).setLevel(logging.WARNING)


# `halfmq broker` exit codes: 1 port in use, 2 data dir locked, 3 corrupt commit log,
# 4 a damaged source metadata file (topics.json, consumer_offsets.json),
# 5 the data directory cannot be created or written at all (a new one on a full disk),
# 6 refused configuration (protected mode: a non-loopback bind without auth; a missing or invalid auth file; a setting
#   out of its range or malformed, such as HALFMQ_BROKER_KAFKA_ADVERTISE).
EXIT_DAMAGED_METADATA = 4
EXIT_DATA_DIR_UNUSABLE = 5
EXIT_REFUSED_CONFIGURATION = 6


def cmd_broker(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from halfmq.broker.runtime.app import create_app
    from halfmq.broker.security.protected_mode import refusal

    try:
        settings = _broker_settings(args)
    except ValidationError as exc:  # one line per refused setting, not a traceback
        print(f"halfmq broker: refused settings: {exc}", file=sys.stderr)
        return EXIT_REFUSED_CONFIGURATION
    if args.verify:
        from .verify_command import run_verify

        return run_verify(settings)
    _configure_logging(settings.log_level)
    if not _start_tracing(settings.traces, "halfmq-broker"):
        return EXIT_REFUSED_CONFIGURATION
    log = logging.getLogger("halfmq.broker")
    refused = refusal(settings.host, settings.auth_file is not None, settings.insecure)
    if refused:
        log.error("%s", refused)
        return EXIT_REFUSED_CONFIGURATION
    runtime = _open_runtime(settings, log)
    if isinstance(runtime, int):
        return runtime
    log.info("recovered in %.3fs (%s)", runtime.store.recovery.seconds, runtime.store.recovery)
    from halfmq.broker.serving.server import PortInUse, serve

    try:
        serve(create_app(settings, runtime), runtime.delivery.close, settings)
    except PortInUse as exc:
        log.error("cannot start: %s", exc)
        runtime.store.close()
        return 1
    return 0


def _broker_settings(args: argparse.Namespace) -> BrokerSettings:
    from halfmq.broker.config import BrokerSettings

    overrides = {k: v for k, v in {"host": args.host, "port": args.port, "data_dir": args.data_dir, "cluster": getattr(args, "cluster", None),
                                   "node_id": getattr(args, "node_id", None), "advertise_url": getattr(args, "advertise_url", None)}.items() if v is not None}
    if args.grpc_port is not None:
        overrides["grpc_port"] = args.grpc_port
    if args.insecure:
        overrides["insecure"] = True
    return BrokerSettings(**overrides)


def _open_runtime(settings: BrokerSettings, log: logging.Logger) -> BrokerRuntime | int:
    """The broker's runtime over its data directory, or the exit code that says why it cannot open (logged)."""
    from halfmq.broker.runtime import BrokerRuntime
    from halfmq.broker.security.auth_file import AuthFileError
    from halfmq.broker.store.atomic_file import DamagedFile
    from halfmq.broker.store.commit_log import CorruptLogError
    from halfmq.broker.store.data_lock import DataDirLocked
    from halfmq.broker.store.message_store import StoreNotWritable

    try:
        return BrokerRuntime.open(settings)
    except DataDirLocked as exc:
        log.error("%s", exc)
        return 2
    except CorruptLogError as exc:
        log.error("cannot start: %s", exc)
        return 3
    except DamagedFile as exc:
        log.error("cannot start: %s", exc)
        return EXIT_DAMAGED_METADATA
    except (StoreNotWritable, OSError) as exc:
        log.error("cannot start: the data directory %s cannot be used: %s", settings.data_dir, exc)
        return EXIT_DATA_DIR_UNUSABLE
    except AuthFileError as exc:
        log.error("cannot start: %s", exc)
        return EXIT_REFUSED_CONFIGURATION


def _start_tracing(traces: str, service_name: str) -> bool:
    """Tracing for this process as OpenTelemetry's variables (OTEL_TRACES_EXPORTER, OTEL_SDK_DISABLED) or the
    HALFMQ_TRACES shortcut say (docs/tracing.md), with one line saying where the spans go; False (logged) when they
    ask for what halfmq cannot do, and the process does not start."""
    from halfmq.tracing import TracingRefused, start

    log = logging.getLogger("halfmq")
    try:
        decided = start(traces, service_name)
    except TracingRefused as exc:
        log.error("cannot start: %s", exc)
        return False
    if decided.on:
        log.info("tracing on (%s): spans of %s go to %s", decided.source, service_name, decided.destination())
    return True


def _serve_service(app, settings) -> None:
    """A service under the broker's HTTP limits (head deadline, connection cap), read from its own settings."""
    from halfmq.broker.serving.http_serving import HttpLimits, serve_uvicorn

    serve_uvicorn(app, host=settings.host, port=settings.port, limits=HttpLimits.of(settings), log_level=settings.log_level,
                  tls_cert_file=settings.tls_cert_file, tls_key_file=settings.tls_key_file)


def cmd_order(args: argparse.Namespace) -> int:
    import os

    from halfmq.services.order.app import create_app
    from halfmq.services.order.config import OrderSettings

    overrides: dict = {k: v for k, v in {"host": args.host, "port": args.port}.items() if v is not None}
    if args.data_dir is not None and "ORDER_DATABASE_URL" not in os.environ:
        overrides["database_url"] = f"sqlite:///{Path(args.data_dir).resolve()}/order.db"
    settings = OrderSettings(**overrides)
    if args.port is not None and "ORDER_PUBLIC_URL" not in os.environ:
        settings.public_url = f"http://127.0.0.1:{settings.port}"
    _configure_logging(settings.log_level)
    if not _start_tracing(settings.traces, f"halfmq-{args.command}"):
        return EXIT_REFUSED_CONFIGURATION
    _serve_service(create_app(settings), settings)
    return 0


def cmd_credit(args: argparse.Namespace) -> int:
    import os

    from halfmq.services.credit.app import create_app
    from halfmq.services.credit.config import CreditSettings

    overrides: dict = {k: v for k, v in {"host": args.host, "port": args.port}.items() if v is not None}
    if args.data_dir is not None and "CREDIT_DATABASE_URL" not in os.environ:
        overrides["database_url"] = f"sqlite:///{Path(args.data_dir).resolve()}/credit.db"
    settings = CreditSettings(**overrides)
    _configure_logging(settings.log_level)
    if not _start_tracing(settings.traces, f"halfmq-{args.command}"):
        return EXIT_REFUSED_CONFIGURATION
    _serve_service(create_app(settings), settings)
    return 0


SERVER_COMMANDS = ("broker", "order", "credit")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; for ``command`` one of the servers (``SERVER_COMMANDS``) only the servers' subcommands, so
    a server's start (paid at every restart and by every test that starts one) loads none of up's, demo's, admin's or
    aggregate's modules (httpx, rich, the demo's driver: about a second on a loaded machine)."""
    parser = argparse.ArgumentParser(prog="halfmq", description="Transactional messages over HTTP")
    parser.add_argument("--version", action="version", version=f"halfmq {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    broker = sub.add_parser("broker", help="run the message broker")
    broker.add_argument("--host")
    broker.add_argument("--port", type=int)
    broker.add_argument("--data-dir", type=Path)
    broker.add_argument("--grpc-port", type=int, help="the RocketMQ 5 gRPC front (0 turns it off; default 8081 with the default --port 10911, "
                                                            "else --port - 2830: 10912 -> 8082, see docs/decisions/029-rocketmq-5-front.md)")
    broker.add_argument("--verify", action="store_true",
                        help="check every commit-log record and consume-queue entry, list what is damaged, then exit "
                             "(0 clean, 3 damaged) instead of serving")
    broker.add_argument("--insecure", action="store_true",
                        help="serve a non-loopback address without authentication (protected mode off)")
    broker.add_argument("--cluster", help="join a replicated broker set whose leadership lives in etcd: etcd://HOST:2379/PREFIX")
    broker.add_argument("--node-id", help="this node's name in its broker set")
    broker.add_argument("--advertise-url", help="where clients and the other nodes reach this broker (default http://HOST:PORT)")
    broker.set_defaults(func=cmd_broker)

    order = sub.add_parser("order", help="run the order service (producer side of the demo)")
    order.add_argument("--host")
    order.add_argument("--port", type=int)
    order.add_argument("--data-dir", type=Path, help="where its SQLite database lives (unless ORDER_DATABASE_URL is set)")
    order.set_defaults(func=cmd_order)

    credit = sub.add_parser("credit", help="run the credit service (consumer side of the demo)")
    credit.add_argument("--host")
    credit.add_argument("--port", type=int)
    credit.add_argument("--data-dir", type=Path, help="where its SQLite database lives (unless CREDIT_DATABASE_URL is set)")
    credit.set_defaults(func=cmd_credit)
    if command in SERVER_COMMANDS:
        return parser

    from . import up_command

    up_command.add_parser(sub)
    from .demo import command as demo_command

    demo_command.add_parser(sub)
    from . import admin_command

    admin_command.add_parser(sub)
    from . import aggregate_command

    aggregate_command.add_parser(sub)
    # Listed here, parsed by the benchmarks themselves: `halfmq --help` loads no benchmark code.
    sub.add_parser("bench", help="run benchmarks (each scenario starts its own processes)", add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        return _main(argv)
    except ModuleNotFoundError as exc:  # the SDK alone, or [broker] without [services]: say which extra to install
        from .extras import missing_extra_line

        line = missing_extra_line(argv, exc.name)
        if line is None:
            raise
        print(line, file=sys.stderr)
        return 2


def _main(argv: list[str]) -> int:
    from .processes.parent_watch import watch_parent_from_env

    watch_parent_from_env()  # a server started by ChildProcess ends with its parent
    if argv[:1] == ["bench"]:
        from halfmq.bench.cli import main as bench_main

        return bench_main(argv[1:])
    args = build_parser(argv[0] if argv else None).parse_args(argv)
    if args.command in ("up", "demo", "order", "credit"):  # children would die one by one on the missing extra
        from .extras import missing_extra_line

        line = missing_extra_line(argv)
        if line is not None:
            print(line, file=sys.stderr)
            return 2
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
