"""`halfmq demo`: real orders through a running (or freshly started) `halfmq up`, then a verdict."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import orjson

from ..up_command import Topology, add_topology_arguments
from .guarantees import Observed, check_all

if TYPE_CHECKING:  # rich is loaded when the demo runs, not when the CLI parses
    from rich.console import Console

FAST_CHECKS = {  # the demo should not wait RocketMQ-scale minutes for check-backs
    "HALFMQ_BROKER_TRANSACTION_TIMEOUT": "3",
    "HALFMQ_BROKER_TRANSACTION_CHECK_INTERVAL": "1",
    "ORDER_LOCAL_TX_TIMEOUT": "10",
}


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def _start_up(topology: Topology, console: Console) -> subprocess.Popen:
    if topology.data_dir.exists():
        shutil.rmtree(topology.data_dir)
    topology.data_dir.mkdir(parents=True)
    log = open(topology.data_dir / "up.log", "w")
    argv = [sys.executable, "-m", "halfmq.cli.main", "up", "--data-dir", str(topology.data_dir), "--host", topology.host,
            "--broker-port", str(topology.broker_port), "--order-port", str(topology.order_port), "--credit-port", str(topology.credit_port)]
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
    return proc


def _run_spark(topology: Topology, console: Console) -> tuple[int | None, dict[str, int] | None, dict | None]:
    from halfmq.jobs.credit_aggregate import AggregateSettings, run

    settings = AggregateSettings(credit_database_url=topology.credit_db, order_database_url=topology.order_db,
                                 output_dir=str(topology.data_dir / "spark"))
    result = run(settings)
    users = {u["user_id"]: int(u["points"]) for u in result.users}
    return sum(users.values()), users, result.report


def cmd_demo(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from .driver import DemoDriver

    console = Console()
    attach_dir = args.data_dir or Path("./data")
    cluster = {"replicas": args.replicas, "etcd_port": args.etcd_port}
    topology = Topology(attach_dir, args.host, args.broker_port, args.order_port, args.credit_port, auth=not args.no_auth, **cluster)
    own = None
    if args.attach or all(_healthy(u) for u in (topology.broker_url, topology.order_url, topology.credit_url)):
        console.print(f"using the running halfmq at {topology.broker_url} / {topology.order_url} / {topology.credit_url}")
    else:
        topology = Topology(args.data_dir or Path("./data/demo"), args.host, args.broker_port, args.order_port, args.credit_port,
                            auth=not args.no_auth, **cluster)
        own = _start_up(topology, console)
    started = time.monotonic()
    try:
        driver = DemoDriver(topology, orders=args.orders, users=args.users, concurrency=args.concurrency,
                            seed=args.seed, chaos=args.chaos, console=console)
        placement = driver.place_all()
        orders = driver.committed_orders()
        per_unit = int(os.environ.get("CREDIT_POINTS_PER_UNIT", "1"))
        driver.wait_settled(orders, per_unit, timeout=args.timeout)
        visible = driver.visible_order_ids()
        balances, credited = driver.credits()
        spark_points = spark_users = reconciliation = None
        if not args.no_spark:
            console.print("running the Spark aggregation and reconciliation …")
            spark_points, spark_users, reconciliation = _run_spark(topology, console)
            if reconciliation is not None:  # the job reconciles every order in the databases, not only this run's
                mine = set(orders)
                reconciliation = {**reconciliation,
                                  "missing_credits": [o for o in reconciliation.get("missing_credits", []) if o in mine],
                                  "orphan_credits": [o for o in reconciliation.get("orphan_credits", []) if o in mine],
                                  "balance_mismatches": [m for m in reconciliation.get("balance_mismatches", []) if m["user_id"] in set(driver.all_users)]}
                spark_users = {u: p for u, p in (spark_users or {}).items() if u in set(driver.all_users)}
                spark_points = sum(spark_users.values())
        observed = Observed(orders, visible, balances, credited, {driver.fail_user}, spark_points, spark_users, reconciliation, per_unit)
        checks = check_all(observed)
    finally:
        if own is not None and not args.keep_running:
            own.send_signal(2)
            own.wait(60)

    outcome = Table(title="orders placed", show_header=True)
    outcome.add_column("outcome")
    outcome.add_column("count", justify="right")
    for name, n in sorted(placement.outcomes.items()):
        outcome.add_row(name, str(n))
    outcome.add_row("retries while the broker was away", str(placement.retries))
    outcome.add_row("broker kill -9", str(placement.broker_kills))
    console.print(outcome)
    totals = Table(title="ledger")
    for col in ("committed orders", "messages on ORDER_TOPIC", "credits", "points (orders)", "points (Spark)"):
        totals.add_column(col, justify="right")
    expected_points = sum(int(a // 1) * per_unit for _, a in orders.values())
    totals.add_row(str(len(orders)), str(len(visible)), str(credited), str(expected_points), str(spark_points if spark_points is not None else "skipped"))
    console.print(totals)
    verdict = Table(title="guarantees (DESIGN section 1)")
    verdict.add_column("guarantee")
    verdict.add_column("result")
    verdict.add_column("detail")
    for c in checks:
        verdict.add_row(c.name, "[green]PASS[/]" if c.ok else "[red]FAIL[/]", c.detail)
    console.print(verdict)
    failed = [c for c in checks if not c.ok]
    console.print(
        f"demo finished in {time.monotonic() - started:.1f}s: "
        + ("[green]all guarantees hold[/]" if not failed else f"[red]{len(failed)} guarantee(s) failed[/]")
    )
    if args.json:
        Path(args.json).write_bytes(
            orjson.dumps(
                {
                    "placement": dict(placement.outcomes),
                    "retries": placement.retries,
                    "broker_kills": placement.broker_kills,
                    "orders": len(orders),
                    "visible": len(visible),
                    "credits": credited,
                    "points": expected_points,
                    "spark_points": spark_points,
                    "checks": [c.__dict__ for c in checks],
                },
                option=orjson.OPT_INDENT_2,
            )
        )
    return 1 if failed else 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    demo = sub.add_parser(
        "demo", help="drive orders through halfmq (starting `up` if none runs) and check the guarantees"
    )
    add_topology_arguments(demo)
    demo.set_defaults(data_dir=None)
    demo.add_argument("--orders", type=int, default=300)
    demo.add_argument("--users", type=int, default=8)
    demo.add_argument("--concurrency", type=int, default=16)
    demo.add_argument("--seed", type=int, default=7)
    demo.add_argument("--chaos", action="store_true", help="also kill -9 the broker in the middle of the run")
    demo.add_argument("--replicas", type=int, default=1, choices=range(1, 10), metavar="N",
                      help="run (or attach to) a broker set of N nodes with a local etcd; --chaos then kills the leader")
    demo.add_argument("--etcd-port", type=int, default=2379, help="the local etcd's client port with --replicas")
    demo.add_argument("--no-spark", action="store_true", help="skip the Spark job")
    demo.add_argument("--attach", action="store_true", help="require an already running halfmq")
    demo.add_argument("--keep-running", action="store_true", help="leave the demo's own `up` running afterwards")
    demo.add_argument("--timeout", type=float, default=180, help="seconds to wait for every order to be credited")
    demo.add_argument("--json", help="also write the report as JSON here")
    demo.set_defaults(func=cmd_demo)
