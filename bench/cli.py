"""`halfmq bench [SCENARIO…] [--quick] [--json PATH]`: run scenarios, print tables, write JSON.

(`halfmq bench footprint` is the SDK's install and import footprint beside other clients: ``footprint``;
`halfmq bench peers [NAME…]` runs the peers' own-client benchmarks: ``peer_command``.)

``halfmq bench …`` hands its arguments to ``main`` here (so ``halfmq --help``
loads no benchmark code); ``python -m halfmq.bench.cli …`` is the same thing. Order of a run: the
in-run baselines the selected scenarios compare with, then each scenario
(each starts and stops its own processes), then ratios and gates. A scenario
that fails is recorded as failed and the others still run; the exit code is
1 if any failed.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console

from . import baselines as baseline_runner
from . import gates, machine, render, results, scenarios
from .context import Context
from .settings import BenchSettings


def configure(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("scenarios", nargs="*", metavar="SCENARIO",
                        help=f"any of: {', '.join(scenarios.NAMES)} (default: all)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, 1 run of ~1 s per case: a smoke run, not a measurement")
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the result document here")
    parser.add_argument("--runs", type=int, help="measured runs per case (default 3; quick 1)")
    parser.add_argument("--seconds", type=float, help="seconds per measured run (default 8; quick 1)")
    parser.add_argument("--warmup", type=float, help="warm-up seconds before each case (default 1; quick 0.3)")
    parser.add_argument("--driver", choices=("aiohttp", "wrk"), default="aiohttp",
                        help="load driver for fixed-body POSTs (send cases and HTTP baselines); the rest is always aiohttp")
    parser.add_argument("--consume-prefill", type=int, help="messages in the consume scenario's backlog")
    parser.add_argument("--recovery-mib", type=int, help="commit log size for the recovery scenario (default 1024; quick 32)")
    parser.add_argument("--spark-rows", type=int, help="credits for the spark scenario (default 1,000,000; quick 10,000)")
    parser.add_argument("--spark-orders", type=int,
                        help="orders on the topic and credits in the ledger for spark's source_read / jdbc_read (default 200,000; quick 10,000)")
    parser.add_argument("--faststream-messages", type=int, help="messages per side and round in the faststream scenario (default 20,000; quick 2,000)")
    parser.add_argument("--timers", type=int, help="timed messages pending in the timers scenario (default 1,000,000; quick 50,000)")
    parser.add_argument("--soak", type=float, metavar="SECONDS",
                        help="replicated: add quorum_soak_c64, 64-in-flight quorum sends for SECONDS, counting elections (the plan's F1 check: 600); "
                             "longlife: a retention soak of SECONDS (retention 3 s: 30 s is 10 periods)")
    parser.add_argument("--cases", metavar="NAME,…", help="replicated, spark: run only these of their cases (e.g. quorum_soak_c64; source_read,jdbc_read)")
    parser.add_argument("--longlife-sizes", metavar="N,…", help="longlife: messages of history per broker (default 100000,300000,1000000)")
    parser.add_argument("--broker-python", metavar="PATH",
                        help="longlife: run the broker under test with this interpreter (another checkout's .venv/bin/python)")
    parser.add_argument("--no-baselines", action="store_true", help="skip the in-run baselines (no ratios)")
    parser.add_argument("--workdir", type=Path, help="parent of the temporary data dirs (default: system temp)")
    parser.add_argument("--keep", action="store_true", help="keep data dirs and server logs after the run")
    parser.set_defaults(func=cmd_bench)
    return parser


def settings_from(args: argparse.Namespace) -> BenchSettings:
    if args.driver == "wrk":
        from .load import wrk_available

        if not wrk_available():
            raise SystemExit("--driver wrk: wrk is not installed (apt-get install wrk)")
    return BenchSettings.for_mode(
        args.quick, runs=args.runs, seconds=args.seconds, warmup=args.warmup, driver=args.driver,
        consume_prefill=args.consume_prefill, workdir=args.workdir, spark_rows=args.spark_rows,
        spark_orders=args.spark_orders, faststream_messages=args.faststream_messages,
        recovery_bytes=args.recovery_mib * 2**20 if args.recovery_mib else None, timers=args.timers,
        longlife_sizes=tuple(int(n) for n in args.longlife_sizes.split(",")) if args.longlife_sizes else None,
        broker_python=args.broker_python,
        soak_seconds=args.soak, cases=tuple(c.strip() for c in args.cases.split(",") if c.strip()) if args.cases else None,
    )


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _baselines_needed(selected: list[str], driver: str) -> list[str]:
    """The in-run baselines the selected scenarios compare against, each once, in order."""
    needed: list[str] = []
    for name in selected:
        try:
            wanted = scenarios.module(name).baselines(driver)
        except ImportError:
            continue  # reported as the scenario's failure when it runs
        for b in wanted:
            if b not in needed:
                needed.append(b)
    return needed


def _run_scenario(ctx: Context, name: str, console: Console) -> dict[str, Any]:
    """One scenario's result; a failure is recorded with what it measured so far, and the run goes on."""
    ctx.partial = {}
    try:
        return scenarios.module(name).run(ctx)
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # noqa: BLE001 - one failed scenario must not lose the others
        console.print(f"[red]{name} failed: {type(exc).__name__}: {exc}[/red]", highlight=False)
        failed = results.scenario_failed(f"{type(exc).__name__}: {exc}"[:2000], dict(ctx.partial))
        failed["traceback"] = traceback.format_exc()[-4000:]
        return failed


def run_bench(selected: list[str], settings: BenchSettings, *, with_baselines: bool = True, keep: bool = False,
              console: Console | None = None, command: str | None = None) -> dict[str, Any]:
    """Run everything selected and return the result document (also the library entry point)."""
    console = console or render.console(stderr=True)
    doc: dict[str, Any] = {
        "format": results.FORMAT,
        "command": command,
        "invoked_as": " ".join(shlex.quote(a) for a in [Path(sys.executable).name, *sys.argv]),
        "started_at": _now(),
        "machine": machine.machine(),
        "versions": machine.versions(),
        "settings": settings.as_json(),
        "scenarios_selected": selected,
        "baselines": {},
        "scenarios": {},
    }
    machine.compile_bytecode()  # timed starts measure the broker, not the compiler (see its docstring)
    ctx = Context.create(settings, console)
    console.print(f"[bold]halfmq bench[/bold] {' '.join(selected)}{' (quick)' if settings.quick else ''} — work dir {ctx.root}")
    try:
        needed = _baselines_needed(selected, settings.driver) if with_baselines else []
        if needed:
            console.rule("baselines")
            doc["baselines"] = baseline_runner.measure(ctx, needed)
        for name in selected:
            console.rule(name)
            started = time.perf_counter()
            doc["scenarios"][name] = _run_scenario(ctx, name, console)
            doc["scenarios"][name]["wall_seconds"] = round(time.perf_counter() - started, 1)
    finally:
        ctx.cleanup(keep=keep)
        if keep:
            console.print(f"data dirs and logs kept in {ctx.root}")
    results.attach_ratios(doc)
    doc["gates"] = gates.evaluate(doc)
    doc["finished_at"] = _now()
    return doc


def cmd_bench(args: argparse.Namespace) -> int:
    selected = list(dict.fromkeys(args.scenarios)) or list(scenarios.NAMES)
    unknown = [s for s in selected if s not in scenarios.NAMES]
    if unknown:
        raise SystemExit(f"unknown scenario(s) {', '.join(unknown)}; choose from {', '.join(scenarios.NAMES)}")
    settings = settings_from(args)
    argv = args.argv
    command = " ".join(["halfmq", "bench", *(shlex.quote(a) for a in argv)])
    doc = run_bench(selected, settings, with_baselines=not args.no_baselines, keep=args.keep, command=command)
    if args.json:
        results.write(doc, args.json)
    out = render.console()
    render.show(doc, out)
    if args.json:
        out.print(f"results written to {args.json}")
    return 1 if any(sc["status"] == "failed" for sc in doc["scenarios"].values()) else 0


def main(argv: list[str] | None = None) -> int:
    argv = argv if argv is not None else sys.argv[1:]
    if argv[:1] == ["footprint"]:  # not a scenario: it starts no broker, it installs clients into venvs
        from .footprint import main as footprint_main

        return footprint_main(argv[1:])
    if argv[:1] == ["peers"]:  # not a scenario: it runs the peers' own-client benchmarks (bench/peer_runners)
        from .peer_command import main as peers_main

        return peers_main(argv[1:])
    parser = configure(argparse.ArgumentParser(prog="halfmq bench", description=__doc__,
                                               formatter_class=argparse.RawDescriptionHelpFormatter))
    args = parser.parse_args(argv)
    args.argv = argv
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
