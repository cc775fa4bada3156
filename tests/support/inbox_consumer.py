"""A consumer process on the inbox for the tests: each message it handles writes one row to ``effects``.

``python -m tests.support.inbox_consumer``, configured by environment:
  INBOX_BROKER_URL, INBOX_DB_URL, INBOX_TOPIC, INBOX_GROUP   where to consume from and write to
  INBOX_KEY            a business key to deduplicate by (default: UNIQ_KEY, else msg_id)
  INBOX_ASYNC=1        AsyncConsumer and an asyncio engine instead of Consumer and threads
  INBOX_KILL_AFTER=N   SIGKILL itself right after the N-th handled message has committed, before its ack
  INBOX_SLEEP          seconds each handler sleeps inside its transaction (to hold a delivery open)
  INBOX_INVISIBLE      the consumer's invisible_seconds
  INBOX_EVENTS         a file that gets one line per event, "<event> <pid> <key>", written unbuffered
                       so a kill -9 loses none: attempt (the handler ran, maybe rolled back later),
                       handled (committed), skipped (a delivery found its key handled already)
A message whose JSON body has ``"fail": true`` makes the handler write its effect and then raise.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import threading
import time

import orjson
from sqlalchemy import Column, Integer, MetaData, String, Table, create_engine
from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine
from sqlalchemy.orm import Session

from halfmq.client import AsyncConsumer, Consumer, Message, message_body_bytes
from halfmq.client.sqlalchemy.inbox import Inbox, inbox_table

metadata = MetaData()
INBOX = inbox_table(metadata)
EFFECTS = Table("effects", metadata, Column("id", Integer, primary_key=True, autoincrement=True),
                Column("key", String(128), nullable=False), Column("msg_id", String(128), nullable=False))


class Events:
    def __init__(self, path: str | None) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644) if path else None

    def write(self, event: str, key: str) -> None:
        if self._fd is not None:
            os.write(self._fd, f"{event} {os.getpid()} {key}\n".encode())


def main() -> None:  # noqa: C901 - a test process: its settings from the environment, then its one loop
    logging.basicConfig(level=logging.WARNING)
    env = os.environ
    url, key = env["INBOX_DB_URL"], env.get("INBOX_KEY") or None
    kill_after = int(env.get("INBOX_KILL_AFTER") or 0)
    sleep = float(env.get("INBOX_SLEEP") or 0)
    events = Events(env.get("INBOX_EVENTS"))
    use_async = env.get("INBOX_ASYNC") == "1"
    sqlite_args = {"connect_args": {"timeout": 30}} if url.startswith("sqlite") else {}
    engine = (create_async_engine(url.replace("sqlite://", "sqlite+aiosqlite://"), **sqlite_args) if use_async
              else create_engine(url, **sqlite_args))
    inbox = Inbox(engine, env.get("INBOX_GROUP", "inbox_test"), key=key)
    handled = 0
    lock = threading.Lock()

    def effect(message: Message) -> tuple[dict[str, str], bool]:
        key_value = inbox.key_of(message)
        events.write("attempt", key_value)
        body = orjson.loads(message_body_bytes(message))
        return {"key": key_value, "msg_id": message.msg_id}, isinstance(body, dict) and body.get("fail") is True

    def after(message: Message, ran: bool) -> None:
        nonlocal handled
        events.write("handled" if ran else "skipped", inbox.key_of(message))
        if ran:
            with lock:
                handled += 1
                doomed = kill_after and handled >= kill_after
            if doomed:  # committed, not acked: the delivery the inbox must absorb
                os.kill(os.getpid(), signal.SIGKILL)

    def write(session: Session, message: Message) -> None:
        row, fail = effect(message)
        session.execute(EFFECTS.insert().values(**row))
        time.sleep(sleep)
        if fail:
            raise RuntimeError("the message asked the handler to fail")

    async def awrite(session: AsyncSession, message: Message) -> None:
        row, fail = effect(message)
        await session.execute(EFFECTS.insert().values(**row))
        await asyncio.sleep(sleep)
        if fail:
            raise RuntimeError("the message asked the handler to fail")

    options = {"max_messages": 16, "invisible_seconds": float(env.get("INBOX_INVISIBLE") or 2), "wait_seconds": 1.0,
               "concurrency": 4}
    broker, topic, group = env["INBOX_BROKER_URL"], env["INBOX_TOPIC"], env.get("INBOX_GROUP", "inbox_test")
    if use_async:
        inner = inbox.async_handler(awrite)

        async def ahandle(message: Message) -> None:
            after(message, await inner(message))

        async def run() -> None:
            consumer = AsyncConsumer(broker, group, topic, ahandle, **options)
            loop = asyncio.get_running_loop()
            loop.add_signal_handler(signal.SIGTERM, consumer.stop)
            try:
                await consumer.run()
            finally:
                await consumer.close()

        asyncio.run(run())
        return
    handler = inbox.handler(write)

    def handle(message: Message) -> None:
        after(message, handler(message))

    consumer = Consumer(broker, group, topic, handle, **options)
    signal.signal(signal.SIGTERM, lambda *_: consumer.stop())
    with consumer:
        consumer.run()


if __name__ == "__main__":
    main()
