#!/usr/bin/env python3
# Source: /work/shared/bench/peers/rabbitmq_bench.py (copied into the project for issue 18; run as a file by the peers' venv python).
"""RabbitMQ durable publish, 256-byte persistent messages, aio-pika.

Starts its own RabbitMQ node (Debian rabbitmq-server, data under /tmp/rmqbench,
AMQP on 127.0.0.1:15673, epmd/distribution on loopback). Durable queue
(classic by default, --queue-type quorum for contrast), persistent messages.
Per rep (each bounded by --seconds and --max-msgs):
  confirm_seq : publisher confirms, await each confirm before the next publish
  confirm_c64 : publisher confirms, 64 publishes in flight on one channel
  tx_seq      : AMQP tx: tx_select once, then publish + tx_commit per message
  tx_c64      : the same on 64 channels concurrently (one message per commit)
then drains the queue (prefetch 256, manual ack per message).
Node and the epmd it started are stopped by PID at the end.
Usage: /tmp/halfmq-peers/bin/python rabbitmq_bench.py [--seconds 20] [--reps 3] [--queue-type classic|quorum]
"""
import argparse
import asyncio
import json
import os
import shutil
import signal
import subprocess
import time

from _load import PAYLOAD, run_load, summarize

BASE = "/tmp/rmqbench"
PORT = 15673


def node_env():
    env = dict(os.environ)
    env.update({
        "HOME": BASE, "RABBITMQ_NODENAME": "bench@localhost", "RABBITMQ_MNESIA_BASE": f"{BASE}/mnesia",
        "RABBITMQ_LOG_BASE": f"{BASE}/log", "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
        "RABBITMQ_NODE_PORT": str(PORT), "RABBITMQ_DIST_PORT": "25673", "ERL_EPMD_ADDRESS": "127.0.0.1",
        "RABBITMQ_ENABLED_PLUGINS_FILE": f"{BASE}/enabled_plugins", "RABBITMQ_CONFIG_FILE": f"{BASE}/rabbitmq",
        "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": "-kernel inet_dist_use_interface {127,0,0,1}",
    })
    return env


def start_node():
    shutil.rmtree(BASE, ignore_errors=True)
    os.makedirs(f"{BASE}/log")
    open(f"{BASE}/enabled_plugins", "w").write("[].\n")
    open(f"{BASE}/rabbitmq.conf", "w").write("loopback_users = none\nvm_memory_high_watermark.relative = 0.4\n")
    p = subprocess.Popen(["/usr/lib/rabbitmq/bin/rabbitmq-server"], env=node_env(), start_new_session=True,
                         stdout=open(f"{BASE}/startup.log", "w"), stderr=subprocess.STDOUT)
    return p


async def wait_ready():
    import aio_pika
    for _ in range(120):
        try:
            c = await aio_pika.connect(f"amqp://guest:guest@127.0.0.1:{PORT}/")
            await c.close()
            return
        except Exception:
            await asyncio.sleep(0.5)
    raise RuntimeError("rabbitmq did not start: " + open(f"{BASE}/startup.log").read()[-2000:])


def stop_node(p):
    # the node runs in its own session: stop its process group (beam + helpers), then the epmd it spawned
    try:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait(30)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    out = subprocess.run(["pgrep", "-s", str(p.pid)], capture_output=True, text=True).stdout.split()
    for pid in out:  # anything left in that session (epmd daemonizes into its own session; handled below)
        try:
            os.kill(int(pid), signal.SIGKILL)
        except ProcessLookupError:
            pass


async def bench(a):
    import aio_pika
    url = f"amqp://guest:guest@127.0.0.1:{PORT}/"
    conn = await aio_pika.connect(url)
    args = {"x-queue-type": a.queue_type}
    res = {k: [] for k in ("confirm_seq", "confirm_c64", "tx_seq", "tx_c64", "consume")}
    for rep in range(a.reps):
        ch = await conn.channel(publisher_confirms=True)
        await ch.queue_delete("bench") if rep else None
        q = await ch.declare_queue("bench", durable=True, arguments=args)
        ex = ch.default_exchange

        async def pub_confirm():
            await ex.publish(aio_pika.Message(PAYLOAD, delivery_mode=aio_pika.DeliveryMode.PERSISTENT),
                             routing_key="bench")
        res["confirm_seq"].append(await run_load(pub_confirm, 1, a.seconds, a.max_msgs))
        res["confirm_c64"].append(await run_load(pub_confirm, 64, a.seconds, a.max_msgs))

        async def tx_run(nch):
            chans = []
            for _ in range(nch):
                c = await conn.channel(publisher_confirms=False)
                await c.transaction().select()
                chans.append(c)
            free = list(chans)

            async def pub_tx():
                c = free.pop()
                try:
                    await c.default_exchange.publish(
                        aio_pika.Message(PAYLOAD, delivery_mode=aio_pika.DeliveryMode.PERSISTENT), routing_key="bench")
                    await c.channel.tx_commit()
                finally:
                    free.append(c)
            r = await run_load(pub_tx, nch, a.seconds, a.max_msgs)
            for c in chans:
                await c.close()
            return r
        res["tx_seq"].append(await tx_run(1))
        res["tx_c64"].append(await tx_run(64))

        # drain
        cch = await conn.channel()
        await cch.set_qos(prefetch_count=256)
        cq = await cch.declare_queue("bench", durable=True, arguments=args, passive=True)
        total = cq.declaration_result.message_count
        got = 0
        done = asyncio.Event()

        async def on_msg(m):
            nonlocal got
            await m.ack()
            got += 1
            if got >= total:
                done.set()
        t0 = time.perf_counter()
        tag = await cq.consume(on_msg)
        try:
            await asyncio.wait_for(done.wait(), timeout=a.seconds * 4)
        except TimeoutError:
            pass
        dt = time.perf_counter() - t0
        await cq.cancel(tag)
        res["consume"].append({"n": got, "total": total, "secs": round(dt, 2), "rps": got / dt})
        await cch.close()
        await ch.close()
    await conn.close()
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--max-msgs", type=int, default=2_000_000)
    ap.add_argument("--queue-type", default="classic", choices=["classic", "quorum"])
    a = ap.parse_args()
    epmd_before = set(subprocess.run(["pgrep", "-x", "epmd"], capture_output=True, text=True).stdout.split())
    p = start_node()
    try:
        asyncio.run(wait_ready())
        res = asyncio.run(bench(a))
    finally:
        epmd_now = set(subprocess.run(["pgrep", "-x", "epmd"], capture_output=True, text=True).stdout.split())
        stop_node(p)
        # stop only an epmd that appeared while our node started (it was spawned by our node)
        for pid in epmd_now - epmd_before:
            try:
                os.kill(int(pid), signal.SIGTERM)
            except ProcessLookupError:
                pass
    ver = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "rabbitmq-server"], capture_output=True, text=True).stdout
    print(json.dumps({"bench": "rabbitmq_durable_publish_256B", "server": "rabbitmq-server " + ver,
                      "queue_type": a.queue_type, "seconds": a.seconds,
                      **{k: summarize(v) for k, v in res.items()}}))
    shutil.rmtree(BASE, ignore_errors=True)


if __name__ == "__main__":
    main()
