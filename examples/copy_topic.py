"""Consume-transform-produce with Kafka-style producer transactions: copy one topic into another, exactly once.

Each round receives up to ``--batch`` messages, sends their transformed copies
and acks the originals in ONE transaction: either the copies appear and the
originals are settled, or neither (the originals come back and are copied
again). Run several copiers in one consumer group, each with its own
transactional id; a copier restarted with the same id fences its old self::

    HALFMQ_URL=http://127.0.0.1:10911 python examples/copy_topic.py \\
        --source IN --target OUT --group copiers --transactional-id copier-1

It stops on SIGTERM/SIGINT after the current round, or with exit code 3 when
fenced (another instance took its transactional id: this one must not go on).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable

from halfmq.client import BrokerError, BrokerUnavailable, Message, Producer, ProducerFenced, SimpleConsumer, TransactionAborted

log = logging.getLogger("copy_topic")
FENCED_EXIT = 3


def upper_case(message: Message) -> str:
    """The transform of this example: the body in capitals (swap in your own)."""
    return message.body.upper()


def copy_round(producer: Producer[None], consumer: SimpleConsumer, target: str,
               transform: Callable[[Message], str], batch: int, invisible_seconds: float) -> int:
    """One transaction: receive, send the copies, ack the originals, commit. Returns the messages copied."""
    messages = consumer.receive(max_messages=batch, invisible_seconds=invisible_seconds, wait_seconds=1)
    if not messages:
        return 0
    producer.begin_transaction()
    try:
        copied_by = f"{producer.transactional_id}@{producer.epoch}"
        for message in messages:
            # The first key picks the target queue, so one key's copies stay in one queue.
            producer.send(target, transform(message), keys=message.keys, sharding_key=message.keys[0] if message.keys else None,
                          properties={"SOURCE_MSG_ID": message.msg_id, "COPIED_BY": copied_by})
        producer.send_offsets_to_transaction(messages)
    except ProducerFenced:
        raise
    except BrokerError:
        _abort_quietly(producer)
        raise
    commit_surely(producer)
    return len(messages)


def commit_surely(producer: Producer[None], pause: float = 0.2) -> None:
    """Commit, asking again while the answer is lost: a repeated commit gets the first answer, never a second commit."""
    while True:
        try:
            producer.commit_transaction()
            return
        except TransactionAborted:
            _abort_quietly(producer)  # aborted by the broker (timeout, restart): the originals come back
            raise
        except BrokerUnavailable as exc:
            log.warning("commit outcome unknown (%s); asking again", exc)
            time.sleep(pause)


def _abort_quietly(producer: Producer[None]) -> None:
    try:
        producer.abort_transaction()
    except ProducerFenced:
        raise
    except BrokerError as exc:  # the broker aborts it anyway (timeout, or recovery after a restart)
        log.info("abort not acknowledged (%s)", exc)


def run(url: str, source: str, target: str, group: str, transactional_id: str, *, batch: int = 50,
        invisible_seconds: float = 30.0, pause: float = 0.0, transform: Callable[[Message], str] = upper_case,
        stop: threading.Event | None = None) -> int:
    """Copy until ``stop`` is set; returns the number of messages copied (committed) by this run."""
    stop = stop or threading.Event()
    copied = 0
    with Producer(url, transactional_id=transactional_id) as producer, SimpleConsumer(url, group, source) as consumer:
        while not stop.is_set():
            try:
                if producer.epoch is None:
                    producer.init_transactions()
                    log.info("%s initialised with epoch %s", transactional_id, producer.epoch)
                copied += copy_round(producer, consumer, target, transform, batch, invisible_seconds)
            except ProducerFenced:
                raise
            except BrokerError as exc:
                log.warning("round failed (%s: %s); trying again", exc.code, exc.detail)
                if producer.epoch is not None:
                    _abort_quietly(producer)  # whatever the broker still holds open of this round
                time.sleep(0.2)
            if pause:
                time.sleep(pause)
    return copied


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=os.environ.get("HALFMQ_URL", "http://127.0.0.1:10911"))
    parser.add_argument("--source", required=True)
    parser.add_argument("--target", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--transactional-id", required=True)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--invisible-seconds", type=float, default=30.0)
    parser.add_argument("--pause", type=float, default=0.0, help="seconds to wait between rounds (tests slow it down)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        copied = run(args.url, args.source, args.target, args.group, args.transactional_id, batch=args.batch,
                     invisible_seconds=args.invisible_seconds, pause=args.pause, stop=stop)
    except ProducerFenced as exc:
        log.error("fenced: %s", exc.detail)
        return FENCED_EXIT
    log.info("stopped after copying %d messages", copied)
    return 0


if __name__ == "__main__":
    sys.exit(main())
