"""`rocketmq`: transactional sends/s through Apache's rocketmq-python-client against halfmq's gRPC front,
versus halfmq's own async SDK over HTTP, on the same broker in the same run.

One op is one transaction: half send, then commit (RocketMQ: ``producer.send(msg, tx)`` +
``tx.commit()``; SDK: ``AsyncTransactionProducer.send_in_transaction`` with a listener answering
commit). Both are durable (fsync'd) on the broker. The RocketMQ client is blocking (its own I/O
thread), so its in-flight transactions are worker threads; the SDK's are coroutines. The ratio
``rocketmq_to_sdk`` is reported per concurrency.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..context import Context
from ..load import Run, drive, run_async
from ..results import scenario_ok, scenario_unavailable, throughput_case
from ..servers import BrokerServer, free_port

TOPIC = "BENCH_RMQ"
CONCURRENCY = (1, 16)


def baselines(driver: str) -> list[str]:
    return []  # compared with halfmq's own SDK measured beside it


async def _rocketmq(endpoint: str, conc: int, seconds: float, max_ops: int, warmup: float, size: int) -> Run:
    from rocketmq import ClientConfiguration, Credentials, Message, Producer, TransactionChecker, TransactionResolution

    class Commit(TransactionChecker):
        def check(self, message):
            return TransactionResolution.COMMIT

    producer = Producer(ClientConfiguration(endpoint, Credentials()), (TOPIC,), Commit())
    await asyncio.to_thread(producer.startup)
    body = b"x" * size

    def one() -> int:
        msg = Message()
        msg.topic, msg.body = TOPIC, body
        tx = producer.begin_transaction()
        producer.send(msg, tx)
        tx.commit()
        return 1

    try:
        return await drive(lambda _i: lambda: asyncio.to_thread(one), conc, seconds, max_ops, requests_per_op=2, warmup=warmup)
    finally:
        await asyncio.to_thread(producer.shutdown)


async def _sdk(url: str, conc: int, seconds: float, max_ops: int, warmup: float, size: int) -> Run:
    from halfmq.client import AsyncTransactionProducer, LocalTransactionState

    class Commit:
        def execute_local_transaction(self, msg: Any, arg: Any) -> LocalTransactionState:
            return LocalTransactionState.COMMIT_MESSAGE

        def check_local_transaction(self, msg: Any) -> LocalTransactionState:
            return LocalTransactionState.COMMIT_MESSAGE

    body = "x" * size
    async with AsyncTransactionProducer(url, "bench_rmq_sdk", Commit(), check_backs=False, max_in_flight=max(conc, 1)) as producer:
        async def one() -> int:
            await producer.send_in_transaction(TOPIC, body)
            return 1

        return await drive(lambda _i: one, conc, seconds, max_ops, requests_per_op=2, warmup=warmup)


def run(ctx: Context) -> dict[str, Any]:
    try:
        import rocketmq  # noqa: F401 - the rocketmq extra
    except ImportError:
        return scenario_unavailable("rocketmq-python-client is not installed (pip install 'halfmq[rocketmq]')")
    s = ctx.settings
    grpc_port = free_port()
    broker = BrokerServer(ctx.dir("rocketmq", "broker"), ctx.logs, env={"HALFMQ_BROKER_GRPC_PORT": str(grpc_port)})
    endpoint = f"127.0.0.1:{grpc_port}"
    cases = ctx.cases()
    with broker:
        broker.start()
        for conc in CONCURRENCY:
            rmq = ctx.repeat(f"rocketmq client c{conc}", lambda _i, w, c=conc: run_async(
                _rocketmq(endpoint, c, s.seconds, s.max_ops, w, s.body_bytes)))
            cases[f"rocketmq_client_c{conc}"] = throughput_case(
                rmq, unit="tx/s", concurrency=conc, what="rocketmq-python-client over gRPC: send(msg, tx) + commit (transactions/s)")
            sdk = ctx.repeat(f"halfmq async SDK c{conc}", lambda _i, w, c=conc: run_async(
                _sdk(broker.url, c, s.seconds, s.max_ops, w, s.body_bytes)))
            cases[f"halfmq_sdk_c{conc}"] = throughput_case(
                sdk, unit="tx/s", concurrency=conc, what="halfmq AsyncTransactionProducer over HTTP: send_in_transaction (transactions/s)")
            if cases[f"halfmq_sdk_c{conc}"]["ops_per_s"]["median"]:
                cases[f"rocketmq_client_c{conc}"]["rocketmq_to_sdk"] = round(
                    cases[f"rocketmq_client_c{conc}"]["ops_per_s"]["median"] / cases[f"halfmq_sdk_c{conc}"]["ops_per_s"]["median"], 3)
    return scenario_ok(cases, topic=TOPIC, concurrency=list(CONCURRENCY))
