"""Rich tables for the terminal: halfmq figures with their ratios, the baselines, the gates."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table


def fmt_rate(v: float | None) -> str:
    if v is None:
        return "—"
    return f"{v:,.0f}" if v >= 100 else f"{v:,.1f}"


def fmt_ms(v: float | None) -> str:
    if v is None:
        return "—"
    return f"{v:,.1f}" if v >= 10 else f"{v:.2f}"


def spread(case: dict[str, Any]) -> tuple[str, str]:
    """(median, "min–max") as text for a throughput or a timed case."""
    if "ops_per_s" in case:
        s = case["ops_per_s"]
        return fmt_rate(s["median"]), f"{fmt_rate(s['min'])}–{fmt_rate(s['max'])}"
    if "figures" in case:  # a figure in the case's own unit (a lateness in ms, a memory in MiB)
        s = case["figures"]
        return f"{s['median']:,.1f}", f"{s['min']:,.1f}–{s['max']:,.1f}"
    s = case["seconds"]
    return f"{s['median']:.2f} s", f"{s['min']:.2f}–{s['max']:.2f} s"


def same_run_ratio(case: dict[str, Any]) -> tuple[str, float] | None:
    """A case compared with another case of its own scenario carries ``vs_<other>`` (faststream's ``vs_sdk``,
    spark's ``vs_jdbc``): (other, ratio), or None."""
    for key, value in case.items():
        if key.startswith("vs_") and isinstance(value, int | float):
            return key[3:], float(value)
    return None


def ratio_text(case: dict[str, Any]) -> str:
    if case.get("ratio") is not None:
        return f"{case['ratio']:.2f}× {case['baseline']}"
    other = same_run_ratio(case)
    return f"{other[1]:.2f}× {other[0]} (same run)" if other else "—"


def results_table(doc: dict[str, Any]) -> Table:
    s = doc["settings"]
    table = Table(title=f"halfmq bench — {s['runs']} run(s) × {s['seconds']:g} s per case, "
                        f"driver {s['driver']}{', quick' if s['quick'] else ''}")
    for col, just in (("scenario", "left"), ("case", "left"), ("unit", "left"), ("median", "right"),
                      ("min–max", "right"), ("p50 ms", "right"), ("p99 ms", "right"), ("vs in-run baseline", "left")):
        table.add_column(col, justify=just)  # type: ignore[arg-type]
    for name, sc in doc["scenarios"].items():
        if sc["status"] != "ok":
            style = "yellow" if sc["status"] == "unavailable" else "red"
            table.add_row(name, f"[{style}]{sc['status']}[/{style}]", "", "", "", "", "", escape(sc.get("reason", "")[:80]))
        for case_name, case in sc["cases"].items():
            med, rng = spread(case)
            errors = f" [red]({case['errors']} err)[/red]" if case.get("errors") else ""
            table.add_row(name, case_name + errors, case["unit"], med, rng, fmt_ms(case.get("p50_ms")),
                          fmt_ms(case.get("p99_ms")), ratio_text(case))
            cb = case.get("check_back")
            if cb:
                table.add_row("", "  └ never ended: half → commit by check-back", "ms", "", f"max {fmt_ms(cb.get('max_ms'))}",
                              fmt_ms(cb.get("p50_ms")), fmt_ms(cb.get("p99_ms")),
                              f"{cb['committed_by_check']}/{cb['never_ended']} committed by check-back")
    return table


def baselines_table(doc: dict[str, Any]) -> Table:
    table = Table(title="in-run baselines (same machine, same run, same driver)")
    for col, just in (("baseline", "left"), ("unit", "left"), ("median", "right"), ("min–max", "right"),
                      ("p50 ms", "right"), ("p99 ms", "right"), ("what", "left")):
        table.add_column(col, justify=just)  # type: ignore[arg-type]
    for name, case in doc.get("baselines", {}).items():
        med, rng = spread(case)
        table.add_row(name, case["unit"], med, rng, fmt_ms(case.get("p50_ms")), fmt_ms(case.get("p99_ms")), case["what"])
    return table


def _gate_figure(value: float, unit: str) -> str:
    """A gate's figure in its unit: seconds with two decimals, milliseconds, a rate, or a bare count."""
    if unit == "s":
        return f"{value:.2f} s"
    if unit == "MiB":
        return f"{value:,.1f} MiB"
    return f"{value:,.0f}{' ms' if unit == 'ms' else unit}"


def gates_table(gates: list[dict[str, Any]]) -> Table:
    table = Table(title="gates")
    for col in ("gate", "measured", "target", "status"):
        table.add_column(col)
    colors = {"met": "green", "missed": "red", "unknown": "yellow", "n/a": "dim"}
    for g in gates:
        measured = "—" if g["measured"] is None else _gate_figure(g["measured"], g["unit"])
        target = "—" if g["target"] is None else f"{g.get('op', '>=').replace('>=', '≥').replace('<=', '≤')} {_gate_figure(g['target'], g['unit'])}"
        c = colors.get(g["status"], "white")
        table.add_row(g["text"], measured, target, f"[{c}]{g['status']}[/{c}]")
    return table


def console(stderr: bool = False) -> Console:
    """A console that does not squeeze the tables to 80 columns when output is piped to a file."""
    probe = Console(stderr=stderr)
    return probe if probe.is_terminal else Console(stderr=stderr, width=160)


def show(doc: dict[str, Any], console: Console) -> None:
    m = doc["machine"]
    console.print(f"[bold]machine[/bold]: {m['cpu_model']}, {m['cores']} cores, {m['memory_gib']} GiB, "
                  f"kernel {m['kernel']}, Python {m['python']}", highlight=False)
    console.print(results_table(doc))
    if doc.get("baselines"):
        console.print(baselines_table(doc))
    if doc.get("gates"):
        console.print(gates_table(doc["gates"]))
