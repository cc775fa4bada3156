"""One partition in a network namespace of the run's own: the leader cut off from both followers, not from etcd.

Run with ``unshare -n`` (``netns.unshare_command``) by tests/integration/broker/cluster/test_a_cut_off_leader.py;
writes ``partition.json``: how long until another node led and took a quorum write, what the cut-off node said it
was meanwhile, and whether the set got every node in sync again once healed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from halfmq.client import Producer

from .nemesis import all_in_sync
from .set_run import set_run


def run(root: Path) -> dict:
    with set_run(root, netns=True) as setup:
        brokers, partitions = setup.brokers, setup.partitions
        assert partitions is not None
        brokers.start()
        old = all_in_sync(brokers)
        with Producer(brokers.nodes[old].url, timeout=10) as producer:
            assert producer.send("cut", "before").status == "SEND_OK"
        followers = [n for n in brokers.nodes if n != old]
        cut_at = time.monotonic()
        rules = [partitions.cut(old, other) for other in followers]
        new = brokers.leader(timeout=90, not_=old)
        took_over = time.monotonic() - cut_at
        with Producer(brokers.nodes[new].url, timeout=10) as producer:
            status = producer.send("cut", "after").status
        seen = brokers.view(old) or {}  # (this process is in no cut cgroup: it reaches every node)
        for rule in rules:
            partitions.heal(rule)
        back = all_in_sync(brokers, timeout=90)
        return {"old": old, "new": new, "took_over_s": round(took_over, 2), "send_after": status,
                "old_role_while_cut": seen.get("role"), "old_writable_while_cut": seen.get("writable"), "leader_after_heal": back}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("root", type=Path)
    args = parser.parse_args(argv)
    (args.root / "partition.json").write_text(json.dumps(run(args.root)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
