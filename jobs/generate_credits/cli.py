"""``python -m halfmq.jobs.generate_credits``: fill the two databases for the job's tests and benchmarks.

    python -m halfmq.jobs.generate_credits --credits 1000000 --migrate --reset \\
        --credit-db sqlite:///./data/bench/credit.db --order-db sqlite:///./data/bench/order.db
"""

from __future__ import annotations

import argparse

from .dataset import generate
from .schema import migrate


def main(argv: list[str] | None = None) -> int:
    from ..credit_aggregate.settings import AggregateSettings

    defaults = AggregateSettings()
    parser = argparse.ArgumentParser(prog="generate_credits", description="write synthetic orders and credits in bulk")
    parser.add_argument("--credits", type=int, default=1_000_000, help="orders with one credit each (default 1,000,000)")
    parser.add_argument("--users", type=int, help="distinct users (default credits/100)")
    parser.add_argument("--days", type=int, default=30, help="days the orders are spread over (from 2026-01-01)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--missing", type=int, default=0, help="extra orders without a credit")
    parser.add_argument("--orphans", type=int, default=0, help="extra credits without an order")
    parser.add_argument("--wrong-balances", type=int, default=0, help="users whose balance is off")
    parser.add_argument("--credit-db", default=defaults.credit_database_url)
    parser.add_argument("--order-db", default=defaults.order_database_url)
    parser.add_argument("--migrate", action="store_true", help="run the Alembic migrations first")
    parser.add_argument("--reset", action="store_true", help="delete existing orders, credits, accounts and summaries first")
    args = parser.parse_args(argv)
    if args.migrate:
        migrate("credit", args.credit_db)
        migrate("order", args.order_db)
    out = generate(args.credit_db, args.order_db, args.credits, users=args.users, days=args.days, seed=args.seed,
                   missing_credits=args.missing, orphan_credits=args.orphans, wrong_balances=args.wrong_balances,
                   reset=args.reset, progress=True)
    print(f"wrote {out.orders:,} orders and {out.credits:,} credits for {out.users:,} users ({out.points:,} points) "
          f"in {out.seconds:.1f}s; missing credits {len(out.missing_credits)}, orphan credits {len(out.orphan_credits)}, "
          f"wrong balances {len(out.wrong_balances)}")
    return 0
