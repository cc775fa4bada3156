"""How long and how big: one place for every bound a benchmark run respects.

Each measured run is bounded both in time (``seconds``) and in count
(``max_ops``); ``--quick`` shrinks everything so the whole suite is a smoke run.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path


@dataclass(frozen=True)
class BenchSettings:
    quick: bool = False
    runs: int = 3                    # measured runs per case (medians and min-max over them)
    seconds: float = 8.0             # per measured run
    warmup: float = 1.0              # per case, discarded
    concurrency: int = 64            # "64 in flight"
    body_bytes: int = 256
    batch: int = 100                 # messages per batched send
    max_ops: int = 2_000_000         # count bound per run
    driver: str = "aiohttp"          # or "wrk" for the fixed-body POST cases (send, HTTP baselines)
    receive_batch: int = 32
    consume_prefill: int = 600_000   # messages in the consume scenario's topic (each run reads it with a new group)
    tx_mix_rollback: float = 0.10
    tx_mix_unended: float = 0.05
    tx_check_wait: float = 30.0      # how long to wait for the last check-backs after a mix run
    orders_max: int = 20_000         # orders per run (count bound; time bound is ``seconds``)
    orders_credit_wait: float = 120.0
    recovery_bytes: int = 1 << 30    # commit log filled before the kill -9 restarts
    spark_rows: int = 1_000_000
    spark_timeout: float = 600.0
    spark_orders: int = 200_000      # spark: orders on ORDER_TOPIC and credits in the ledger read by source_read / jdbc_read
    faststream_messages: int = 20_000  # faststream: messages each side publishes then consumes per round
    faststream_concurrency: int = 16   # faststream: publishes in flight, and messages the subscriber handles at once
    faststream_timeout: float = 300.0  # faststream: longest a consume may take before the run fails
    fsync_seconds: float = 5.0       # raw append + fsync loop per run (the peers' fsync_bench default)
    timers: int = 1_000_000          # timers: timed messages pending (due over 24 h) while the probes are measured
    timer_probes: int = 2_000        # timers: probes due over the next ``timer_probe_window`` seconds
    timer_probe_window: float = 60.0
    soak_seconds: float = 0.0        # replicated: 64-in-flight quorum sends this long, counting elections; longlife: the retention soak (0: no soak)
    cases: tuple[str, ...] = ()      # replicated, spark: only these of their cases (empty: all)
    longlife_sizes: tuple[int, ...] = (100_000, 300_000, 1_000_000)  # longlife: messages of history, one broker each
    longlife_snapshot_wait: float = 5.0  # longlife: seconds a started broker is left before it is measured and stopped
    broker_python: str | None = None  # longlife: the interpreter of the broker under test (another checkout's: before/after)
    workdir: Path | None = None      # where temp dirs go (default: the system temp dir)

    @classmethod
    def for_mode(cls, quick: bool, **overrides: object) -> BenchSettings:
        base = cls.quick_settings() if quick else cls()
        return replace(base, **{k: v for k, v in overrides.items() if v is not None})

    @classmethod
    def quick_settings(cls) -> BenchSettings:
        return cls(
            quick=True, runs=1, seconds=1.0, warmup=0.3, max_ops=200_000, consume_prefill=20_000,
            tx_check_wait=15.0, orders_max=1_000, orders_credit_wait=60.0, recovery_bytes=32 << 20,
            spark_rows=10_000, spark_orders=10_000, faststream_messages=2_000, fsync_seconds=1.0, timers=50_000, timer_probes=500, timer_probe_window=10.0,
            longlife_sizes=(5_000,), longlife_snapshot_wait=2.0,
        )

    def as_json(self) -> dict:
        out = asdict(self)
        out["workdir"] = str(self.workdir) if self.workdir else None
        out["cases"] = list(self.cases)
        out["longlife_sizes"] = list(self.longlife_sizes)
        return out
