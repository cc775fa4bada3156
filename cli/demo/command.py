"""`halfmq demo`: real orders through its own `halfmq up` (or, with --attach, a running one), then a verdict.

The demo never uses nor kills a halfmq it did not start: its `up` takes free ports when the default
ones are taken, and --chaos kills a broker only if it is a child of that `up` (issue 30, item 13).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import orjson

from ..processes.child_process import free_port, parent_pid, port_taken
from ..up_command import Topology, add_topology_arguments
from .guarantees import TITLE as GUARANTEES_TITLE
from .guarantees import Observed, PaymentsObserved, check_all, check_payments, committed_sum
from .observed_orders import applied_sequences, sent_sequences, wait_payments_due
from .ports import Choice, PortTaken, Wanted, choose

if TYPE_CHECKING:  # rich is loaded when the demo runs, not when the CLI parses
    from decimal import Decimal

    from rich.console import Console

    from .driver import DemoDriver, Placement
    from .guarantees import Check

FAST_CHECKS = {  # the demo should not wait RocketMQ-scale minutes for check-backs
    "HALFMQ_BROKER_TRANSACTION_TIMEOUT": "3",
    "HALFMQ_BROKER_TRANSACTION_CHECK_INTERVAL": "1",
    "ORDER_LOCAL_TX_TIMEOUT": "10",
    "ORDER_PAYMENT_DUE_SECONDS": "10",  # an unpaid order is cancelled 10 s after its commit (30 min outside the demo)
}


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


@dataclass
class OwnStack:
    """The `halfmq up` this demo started, and the one way the demo kills a broker: one of that `up`'s own children.

    The pid comes from the pid file that `up` keeps in the demo's data dir, and is killed only if that
    process's parent is this `up`: never a pid from a network answer, never a process the demo did not start.
    """

    proc: subprocess.Popen
    topology: Topology

    def kill9(self, broker_url: str) -> int | None:
        """SIGKILL the broker serving ``broker_url`` if this demo's `up` runs it; its pid, or None."""
        node = int(broker_url.rsplit(":", 1)[1]) - self.topology.broker_port
        if not 0 <= node < self.topology.replicas:
            return None
        name = "broker" if self.topology.replicas <= 1 else f"broker-n{node + 1}"
        try:
            pid = int(json.loads(self.topology.pid_file.read_text())[name])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if parent_pid(pid) != self.proc.pid:
            return None
        os.kill(pid, signal.SIGKILL)
        return pid

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(60)


def _free_run(host: str, count: int, avoid: set[int]) -> int:
    """``count`` consecutive free ports on ``host`` (a set's nodes, etcd's two), none of them in ``avoid``."""
    for _ in range(100):
        start = free_port(host)
        span = range(start, start + count)
        if span[-1] <= 65535 and not any(p in avoid or port_taken(host, p) for p in span):
            return start
    raise PortTaken(f"found no {count} consecutive free ports")


def own_ports(args: argparse.Namespace, taken: Callable[[str, int], bool] = port_taken,
              free_run: Callable[[str, int, set[int]], int] = _free_run) -> Choice:
    """The ports of the demo's own `up`: asked-for ones where free, else free ones; PortTaken for a taken one the user chose."""
    from halfmq.broker.config import default_grpc_port

    defaults = Topology(Path("."))

    def want(flag: str, value: int | None, default: int, count: int = 1) -> Wanted:
        return Wanted(flag, default if value is None else value, count, given=value is not None)

    def busy(port: int) -> bool:
        return taken(args.host, port)

    def free(count: int, avoid: set[int]) -> int:
        return free_run(args.host, count, avoid)

    wanted = [want("--broker-port", args.broker_port, defaults.broker_port, args.replicas),
              want("--order-port", args.order_port, defaults.order_port), want("--credit-port", args.credit_port, defaults.credit_port)]
    if args.replicas > 1:
        wanted.append(want("--etcd-port", args.etcd_port, defaults.etcd_port, 2))
    chosen = choose(wanted, busy, free)
    if args.grpc_port == 0:  # the front off: nothing to bind
        return Choice(chosen.ports | {"--grpc-port": 0}, chosen.moved, chosen.used)
    # The gRPC front follows the broker's port unless asked for, as the broker's own default does.
    grpc = want("--grpc-port", args.grpc_port, default_grpc_port(chosen.ports["--broker-port"]), args.replicas)
    return choose([grpc], busy, free, after=chosen)


def _start_up(topology: Topology, console: Console) -> OwnStack:
    if topology.data_dir.exists():
        shutil.rmtree(topology.data_dir)
    topology.data_dir.mkdir(parents=True)
    log = open(topology.data_dir / "up.log", "w")
    argv = [sys.executable, "-m", "halfmq.cli.main", "up", "--data-dir", str(topology.data_dir), "--host", topology.host,
            "--broker-port", str(topology.broker_port), "--order-port", str(topology.order_port), "--credit-port", str(topology.credit_port)]
    if topology.grpc_port is not None:
        argv += ["--grpc-port", str(topology.grpc_port)]
    if not topology.auth:
        argv.append("--no-auth")
    if topology.replicas > 1:
        argv += ["--replicas", str(topology.replicas), "--etcd-port", str(topology.etcd_port)]
    proc = subprocess.Popen(argv, env={**os.environ, **FAST_CHECKS}, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    console.print(f"started [bold]halfmq up[/] (pid {proc.pid}) in {topology.data_dir}, logs in {topology.data_dir / 'up.log'}")
    deadline = time.monotonic() + 90
    while not all(_healthy(u) for u in (topology.broker_url, topology.order_url, topology.credit_url)):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"halfmq up did not come up; see {topology.data_dir / 'up.log'}")
        time.sleep(0.3)
    return OwnStack(proc, topology)


def _run_spark(topology: Topology, console: Console) -> tuple[int | None, dict[str, int] | None, dict | None]:
    from halfmq.jobs.credit_aggregate import AggregateSettings, run

    settings = AggregateSettings(credit_database_url=topology.credit_db, order_database_url=topology.order_db,
                                 output_dir=str(topology.data_dir / "spark"))
    result = run(settings)
    users = {u["user_id"]: int(u["points"]) for u in result.users}
    return sum(users.values()), users, result.report


def cmd_demo(args: argparse.Namespace) -> int:
    from rich.console import Console

    console = Console()
    topology = _attached_topology(args, console) if args.attach else _own_topology(args, console)
    if isinstance(topology, int):
        return topology
    own = None if args.attach else _start_up(topology, console)
    started = time.monotonic()
    try:
        run = _drive(args, topology, own, console)
    finally:
        if own is not None and not args.keep_running:
            own.stop()
    _print_report(console, run, started)
    if args.json:
        _write_json(Path(args.json), run)
    return 1 if any(not c.ok for c in run.checks) else 0


def _attached_topology(args: argparse.Namespace, console: Console) -> Topology | int:
    """The running halfmq that --attach names, or exit code 2 (with --chaos, which kills only the demo's own)."""
    if args.chaos:
        print("halfmq demo: --chaos kills only a broker the demo started itself; drop --attach (the demo then starts its own "
              "halfmq, on free ports if the default ones are taken) or drop --chaos", file=sys.stderr)
        return 2
    defaults = Topology(Path("."))
    topology = Topology(args.data_dir or Path("./data"), args.host, args.broker_port or defaults.broker_port,
                        args.order_port or defaults.order_port, args.credit_port or defaults.credit_port, auth=not args.no_auth,
                        replicas=args.replicas, etcd_port=args.etcd_port or defaults.etcd_port)
    console.print(f"using the running halfmq at {topology.broker_url} / {topology.order_url} / {topology.credit_url}")
    return topology


def _own_topology(args: argparse.Namespace, console: Console) -> Topology | int:
    """Where the demo's own `up` will listen (free ports for the defaults that are taken), or exit code 2."""
    try:
        choice = own_ports(args)
    except PortTaken as exc:
        print(f"halfmq demo: {exc}", file=sys.stderr)
        return 2
    for line in choice.moved:
        console.print(line, soft_wrap=True)
    ports = choice.ports
    return Topology(args.data_dir or Path("./data/demo"), args.host, ports["--broker-port"], ports["--order-port"],
                    ports["--credit-port"], auth=not args.no_auth, replicas=args.replicas,
                    etcd_port=ports.get("--etcd-port", Topology(Path(".")).etcd_port), grpc_port=ports["--grpc-port"])


@dataclass
class _DemoRun:
    placement: Placement
    orders: dict[str, tuple[str, Decimal]]
    visible: list[str]
    credited: int
    per_unit: int
    spark_points: int | None
    checks: list[Check]
    refunded: frozenset[str] = frozenset()


def _drive(args: argparse.Namespace, topology: Topology, own: OwnStack | None, console: Console) -> _DemoRun:
    """Place the orders, wait until they are credited, run the Spark job, and check the guarantees."""
    from .driver import DemoDriver

    driver = DemoDriver(topology, orders=args.orders, users=args.users, concurrency=args.concurrency,
                        seed=args.seed, kill_broker=own.kill9 if own is not None and args.chaos else None, console=console)
    placement = driver.place_all()
    orders = driver.committed_orders()
    refunded = driver.refund_some(orders)
    per_unit = int(os.environ.get("CREDIT_POINTS_PER_UNIT", "1"))
    driver.wait_settled(orders, per_unit, timeout=args.timeout, refunded=refunded)
    visible = driver.visible_order_ids()
    sent, applied = sent_sequences(driver), applied_sequences(driver)
    balances, credited = driver.credits()
    credited -= len(refunded)  # the ledger's refund rows: the rest are the orders' credits
    spark_points = spark_users = reconciliation = None
    if not args.no_spark:
        console.print("running the Spark aggregation and reconciliation …")
        spark_points, spark_users, reconciliation = _run_spark(topology, console)
        if reconciliation is not None:  # the job reconciles every order in the databases, not only this run's
            spark_points, spark_users, reconciliation = _this_runs(reconciliation, spark_users, set(orders), set(driver.all_users))
    observed = Observed(orders, visible, balances, credited, {driver.fail_user}, spark_points, spark_users, reconciliation, per_unit,
                        refunded=refunded, sent=sent, applied=applied)
    checks = check_all(observed) + _payment_checks(driver, orders, args.timeout, refunded)
    return _DemoRun(placement, orders, visible, credited, per_unit, spark_points, checks, refunded)


def _payment_checks(driver: DemoDriver, orders: dict[str, tuple[str, Decimal]], timeout: float,
                    refunded: frozenset[str]) -> list[Check]:
    """The payment-due rows, once every order's payment has fallen due (none when it falls due past ``timeout``)."""
    released: dict[str, int] = {}
    rows = wait_payments_due(driver, orders, timeout=timeout, released=released)
    if rows is None:
        return []
    p = driver.payments
    return check_payments(PaymentsObserved(rows, p.paid, p.refused, p.unknown, refunded, released))


def _this_runs(reconciliation: dict, spark_users: dict[str, int] | None, mine: set[str],
               users: set[str]) -> tuple[int, dict[str, int], dict]:
    """The Spark job's totals and reconciliation cut down to this run's orders and users."""
    reconciliation = {**reconciliation,
                      "missing_credits": [o for o in reconciliation.get("missing_credits", []) if o in mine],
                      "orphan_credits": [o for o in reconciliation.get("orphan_credits", []) if o in mine],
                      "balance_mismatches": [m for m in reconciliation.get("balance_mismatches", []) if m["user_id"] in users]}
    spark_users = {u: p for u, p in (spark_users or {}).items() if u in users}
    return sum(spark_users.values()), spark_users, reconciliation


def _print_report(console: Console, run: _DemoRun, started: float) -> None:
    from rich.table import Table

    outcome = Table(title="orders placed", show_header=True)
    outcome.add_column("outcome")
    outcome.add_column("count", justify="right")
    for name, n in sorted(run.placement.outcomes.items()):
        outcome.add_row(name, str(n))
    outcome.add_row("retries while the broker was away", str(run.placement.retries))
    outcome.add_row("broker kill -9", str(run.placement.broker_kills))
    for failover in run.placement.failovers:
        outcome.add_row(f"failover after killing {failover['killed']}", f"{failover['leader']} leads term {failover['term']} "
                                                                       f"after {failover['seconds']:.2f} s")
    console.print(outcome)
    totals = Table(title="ledger")
    for col in ("committed orders", "messages on ORDER_TOPIC", "credits", "points (orders)", "points (Spark)"):
        totals.add_column(col, justify="right")
    spark = str(run.spark_points if run.spark_points is not None else "skipped")
    totals.add_row(str(len(run.orders)), str(len(run.visible)), str(run.credited), str(_expected_points(run)), spark)
    console.print(totals)
    console.print(committed_sum(dict(run.placement.outcomes), len(run.orders)))
    verdict = Table(title=GUARANTEES_TITLE)
    verdict.add_column("guarantee")
    verdict.add_column("result")
    verdict.add_column("detail")
    for c in run.checks:
        verdict.add_row(c.name, "[green]PASS[/]" if c.ok else "[red]FAIL[/]", c.detail)
    console.print(verdict)
    failed = [c for c in run.checks if not c.ok]
    console.print(
        f"demo finished in {time.monotonic() - started:.1f}s: "
        + ("[green]all guarantees hold[/]" if not failed else f"[red]{len(failed)} guarantee(s) failed[/]")
    )


def _expected_points(run: _DemoRun) -> int:
    return sum(int(a // 1) * run.per_unit for _, a in run.orders.values()) - _refunded_points(run)


def _refunded_points(run: _DemoRun) -> int:
    return sum(int(run.orders[oid][1] // 1) * run.per_unit for oid in run.refunded)


def _write_json(path: Path, run: _DemoRun) -> None:
    path.write_bytes(
        orjson.dumps(
            {
                "placement": dict(run.placement.outcomes),
                "retries": run.placement.retries,
                "broker_kills": run.placement.broker_kills,
                "failovers": run.placement.failovers,
                "orders": len(run.orders),
                "visible": len(run.visible),
                "credits": run.credited,
                "refunds": len(run.refunded),
                "points": _expected_points(run),
                "spark_points": run.spark_points,
                "checks": [c.__dict__ for c in run.checks],
            },
            option=orjson.OPT_INDENT_2,
        )
    )


def add_parser(sub: argparse._SubParsersAction) -> None:
    demo = sub.add_parser(
        "demo", help="start its own `halfmq up` (on free ports if the defaults are taken), drive orders through it and check the guarantees"
    )
    add_topology_arguments(demo)
    # Unset ports are the defaults, moved to free ones if taken; a port given is used or refused (never moved).
    demo.set_defaults(data_dir=None, broker_port=None, order_port=None, credit_port=None)
    demo.add_argument("--orders", type=int, default=300)
    demo.add_argument("--users", type=int, default=8)
    demo.add_argument("--concurrency", type=int, default=16)
    demo.add_argument("--seed", type=int, default=7)
    demo.add_argument("--chaos", action="store_true",
                      help="also kill -9 the broker in the middle of the run (only a broker the demo started: not with --attach)")
    demo.add_argument("--replicas", type=int, default=1, choices=range(1, 10), metavar="N",
                      help="run (or attach to) a broker set of N nodes with a local etcd; --chaos then kills the leader")
    demo.add_argument("--etcd-port", type=int, help="the local etcd's client port with --replicas (default 2379, or free ones if taken)")
    demo.add_argument("--no-spark", action="store_true", help="skip the Spark job")
    demo.add_argument("--attach", action="store_true",
                      help="drive an already running halfmq at the given ports instead of starting one (no --chaos)")
    demo.add_argument("--keep-running", action="store_true", help="leave the demo's own `up` running afterwards")
    demo.add_argument("--timeout", type=float, default=180, help="seconds to wait for every order to be credited")
    demo.add_argument("--json", help="also write the report as JSON here")
    demo.set_defaults(func=cmd_demo)
