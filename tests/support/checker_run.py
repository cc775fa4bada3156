"""One run of the queue checker: etcd, a set of 3 brokers, writers and consumers, a nemesis; the history as JSON.

``python -m tests.support.checker_run ROOT --faults N --seed S [--netns]`` starts everything under ROOT, runs the
writers (one idempotent AsyncProducer over every node's URL, each send numbered) and consumers (SimpleConsumers of
one group over every node's URL, receiving and acking) while ``tests/support/nemesis.py`` applies N seeded faults,
heals, settles, reads the whole topic back from the leader, copies each node's commit log to ROOT/logs/NODE and
writes ROOT/run.json (the history, the faults and their counts). With ``--netns`` (started by
``tests/support/netns.py``'s ``unshare_command``) the nodes listen on 127.0.0.11–13, etcd on 127.0.0.10, and the
nemesis has partitions too. The test (tests/integration/broker/cluster/test_queue_checker_under_faults.py) checks.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import threading
import time
from pathlib import Path

from halfmq.client import AsyncProducer, Producer, SimpleConsumer
from halfmq.wire import SettleStatus

from .history import History
from .nemesis import Nemesis, all_in_sync
from .set_run import set_run

WRITERS = 16
CONSUMERS = 3
TOPIC = "checked"
GROUP = "checker"
DISK_SIZE = 2 << 30  # each node's tmpfs: room for a long run; memory is used only for what is written


class Writers:
    """WRITERS tasks sharing one idempotent AsyncProducer, each sending its own unique values until stopped."""

    def __init__(self, urls: list[str], history: History) -> None:
        self.urls = urls
        self.history = history
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)

    def __enter__(self) -> Writers:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=120)

    async def _run(self) -> None:
        async with AsyncProducer(",".join(self.urls), idempotent=True, retries=200, timeout=5.0) as producer:
            await asyncio.gather(*(self._write(producer, f"w{i}") for i in range(WRITERS)))

    async def _write(self, producer: AsyncProducer, client: str) -> None:
        n = 0
        while not self._stop.is_set():
            value = f"{client}-{n}"
            n += 1
            self.history.attempted(client, value)
            try:
                sent = await producer.send(TOPIC, value)
            except Exception as failed:  # noqa: BLE001 - recorded: an unknown outcome, never an acknowledgement
                self.history.failed(value, type(failed).__name__)
                await asyncio.sleep(0.05)
                continue
            if sent.status == "SEND_OK":
                self.history.acknowledged(value, f"{sent.queue_id}:{sent.queue_offset}")
            else:
                self.history.failed(value, sent.status.value)


class Consumers:
    """CONSUMERS threads, each a SimpleConsumer of GROUP: receive, record, ack, record each ack answered OK."""

    def __init__(self, urls: list[str], history: History) -> None:
        self.urls = urls
        self.history = history
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._consume, args=(f"c{i}",), daemon=True) for i in range(CONSUMERS)]
        self.errors = 0

    def __enter__(self) -> Consumers:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=60)

    def _consume(self, name: str) -> None:
        with SimpleConsumer(",".join(self.urls), GROUP, TOPIC, timeout=5.0, retries=3) as consumer:
            while not self._stop.is_set():
                asked = self.history.now()
                try:
                    messages = consumer.receive(16, invisible_seconds=10, wait_seconds=1)
                    for message in messages:
                        self.history.received(message.body, name, asked)
                    bodies = {m.receipt_handle: m.body for m in messages}
                    if bodies:
                        for result in consumer.ack([h for h in bodies if h]):
                            if result.status == SettleStatus.OK:
                                self.history.consumer_acked(bodies[result.receipt_handle], name)
                except Exception:  # noqa: BLE001 - a fault: the receive or the ack did not answer; try again
                    self.errors += 1
                    time.sleep(0.2)


def read_topic(url: str) -> list[str]:
    """Every stored copy in TOPIC, queue by queue, by offset from the given node."""
    values: list[str] = []
    with Producer(url, timeout=10) as reader:
        for queue in reader.get_topic(TOPIC).queues:
            offset = queue.min_offset
            while offset < queue.max_offset:
                page = reader.read(TOPIC, queue.queue_id, offset, max=1000)
                assert not page.damaged_offsets, f"damaged records in queue {queue.queue_id}: {page.damaged_offsets}"
                values += [m.body for m in page.messages]
                offset = page.next_offset
    return values


def run(root: Path, faults: int, seed: int, netns: bool) -> dict:
    started = time.monotonic()
    rng = random.Random(seed)
    history = History()
    with set_run(root, netns=netns, disk_size=DISK_SIZE) as setup:
        brokers = setup.brokers
        nemesis = Nemesis(brokers, rng, setup.partitions)
        try:
            brokers.start()
            all_in_sync(brokers)
            with Writers(brokers.urls, history), Consumers(brokers.urls, history) as consumers:
                for i, kinds in enumerate(nemesis.schedule(faults), 1):
                    time.sleep(rng.uniform(0.5, 1.5))
                    nemesis.step(kinds)
                    print(f"{time.monotonic() - started:6.0f}s step {i}: {nemesis.applied[-1]}", flush=True)
                time.sleep(1.0)
            leader = all_in_sync(brokers)
            brokers.caught_up()
            history.read_back(read_topic(brokers.nodes[leader].url))
            (root / "logs").mkdir(exist_ok=True)
            for node in brokers.nodes:
                (root / "logs" / node).write_bytes(brokers.log_bytes(node))
        except BaseException:
            print(f"the run failed after {sum(nemesis.counts.values())} faults ({dict(nemesis.counts)}); the last: "
                  f"{nemesis.applied[-3:]}", file=sys.stderr, flush=True)
            raise
    return {"seed": seed, "seconds": round(time.monotonic() - started), "faults": nemesis.applied,
            "counts": dict(nemesis.counts), "overlapped": nemesis.overlapped, "consumer_errors": consumers.errors, "history": history.to_json()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("root", type=Path)
    parser.add_argument("--faults", type=int, default=6)
    parser.add_argument("--seed", type=int, default=32)
    parser.add_argument("--netns", action="store_true")
    args = parser.parse_args(argv)
    outcome = run(args.root, args.faults, args.seed, args.netns)
    (args.root / "run.json").write_text(json.dumps(outcome))
    return 0


if __name__ == "__main__":
    sys.exit(main())
