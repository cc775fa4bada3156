#!/usr/bin/env python3
# Source: /work/shared/bench/peers/nats_bench.py (copied into the project for issue 18; run as a file by the peers' venv python).
"""NATS JetStream durable publish-with-ack and consume, 256-byte messages, nats-py.

Starts its own nats-server on 127.0.0.1:14222 (file storage under /tmp), stream
BENCH (file, 1 replica). Per rep: publish sequentially (await PubAck each) for
--seconds, publish with 64 in flight for --seconds, then drain everything with a
pull consumer (explicit ack per message). Server stopped by PID at the end.
Usage: /tmp/halfmq-peers/bin/python nats_bench.py [--server-bin nats-server] [--sync-always]
"""
import argparse
import asyncio
import json
import os
import shutil
import subprocess
import time

from _load import PAYLOAD, run_load, summarize

PORT = 14222


def start_server(binary, sync_always, datadir):
    shutil.rmtree(datadir, ignore_errors=True)
    os.makedirs(datadir)
    conf = os.path.join(datadir, "nats.conf")
    js = f'store_dir: "{datadir}/js"' + ("\n  sync_interval: always" if sync_always else "")
    with open(conf, "w") as f:
        f.write(f"listen: 127.0.0.1:{PORT}\njetstream {{\n  {js}\n}}\n")
    p = subprocess.Popen([binary, "-c", conf], stdout=open(f"{datadir}/out.log", "w"),
                         stderr=subprocess.STDOUT)
    time.sleep(1.5)
    if p.poll() is not None:
        raise RuntimeError(open(f"{datadir}/out.log").read())
    ver = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.strip()
    return p, ver


async def bench(a):
    import nats
    from nats.js.api import AckPolicy, ConsumerConfig, StorageType, StreamConfig
    nc = await nats.connect(f"nats://127.0.0.1:{PORT}")
    js = nc.jetstream()
    seq_runs, c64_runs, drain_runs = [], [], []
    for rep in range(a.reps):
        try:
            await js.delete_stream("BENCH")
        except Exception:
            pass
        await js.add_stream(StreamConfig(name="BENCH", subjects=["bench.>"], storage=StorageType.FILE,
                                         num_replicas=1))

        async def pub():
            await js.publish("bench.orders", PAYLOAD)
        seq_runs.append(await run_load(pub, 1, a.seconds, a.max_msgs))
        c64_runs.append(await run_load(pub, 64, a.seconds, a.max_msgs))
        total = (await js.stream_info("BENCH")).state.messages
        sub = await js.pull_subscribe("bench.>", durable="drain",
                                      config=ConsumerConfig(ack_policy=AckPolicy.EXPLICIT, max_ack_pending=20000))
        got = 0
        t0 = time.perf_counter()
        deadline = t0 + a.seconds * 3
        while got < total and time.perf_counter() < deadline:
            try:
                msgs = await sub.fetch(batch=256, timeout=2)
            except Exception:
                continue
            for m in msgs:
                await m.ack()
            got += len(msgs)
        await nc.flush()
        dt = time.perf_counter() - t0
        drain_runs.append({"n": got, "total": total, "secs": round(dt, 2), "rps": got / dt})
        await sub.unsubscribe()
    await nc.close()
    return seq_runs, c64_runs, drain_runs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server-bin", default="nats-server")
    ap.add_argument("--sync-always", action="store_true", help="jetstream sync_interval: always (>= 2.10)")
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--max-msgs", type=int, default=2_000_000)
    a = ap.parse_args()
    datadir = "/tmp/natsbench"
    p, ver = start_server(a.server_bin, a.sync_always, datadir)
    try:
        seq, c64, drain = asyncio.run(bench(a))
    finally:
        p.terminate()
        p.wait(10)
        shutil.rmtree(datadir, ignore_errors=True)
    print(json.dumps({"bench": "nats_jetstream_publish_ack_256B", "server": ver,
                      "sync_interval": "always" if a.sync_always else "default (periodic, 2m)",
                      "seconds": a.seconds, "publish_seq": summarize(seq), "publish_c64": summarize(c64),
                      "consume_pull_ack": summarize(drain)}))


if __name__ == "__main__":
    main()
