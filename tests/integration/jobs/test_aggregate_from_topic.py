"""The job's topic mode for real: orders through the order service, credited by the credit service, then the job
aggregates ORDER_TOPIC itself (halfmq.spark) and checks it against the ledger it reads over JDBC."""

from __future__ import annotations

import time

import httpx
import pytest
from sqlalchemy import delete, func, select

from halfmq import TransactionProducer
from halfmq.client import LocalTransactionState
from halfmq.jobs import credit_aggregate as job
from halfmq.services.credit.models import CreditRecord
from halfmq.services.database import create_db_engine
from tests.support.processes import ServiceProcess

TOPIC = "ORDER_TOPIC"


class RolledBack:
    def execute_local_transaction(self, message, arg):
        return LocalTransactionState.ROLLBACK_MESSAGE

    def check_local_transaction(self, message):
        return LocalTransactionState.ROLLBACK_MESSAGE


def place_orders(order_url: str, count: int, refunds: int) -> None:
    with httpx.Client(base_url=order_url, timeout=30) as http:
        placed = [http.post("/orders", json={"user_id": f"user-{i % 4}", "amount": f"{10 + i}.75"}) for i in range(count)]
        assert all(r.status_code == 201 for r in placed), [r.text for r in placed if r.status_code != 201][:3]
        for answer in placed[:refunds]:
            deadline = time.monotonic() + 60
            while (refund := http.post(f"/orders/{answer.json()['order_id']}/refund")).status_code == 409 and time.monotonic() < deadline:
                time.sleep(0.2)  # ORDER_NOT_SENT: its message waits for the check-back
            assert refund.status_code == 201, refund.text


@pytest.mark.timeout(600)  # two services, a broker and two runs of the job
def test_the_topic_mode_aggregates_order_topic_and_agrees_with_the_ledger_and_names_what_the_ledger_lacks(start_broker, tmp_path, spark) -> None:
    broker = start_broker()
    httpx.post(f"{broker.url}/v1/topics", json={"name": TOPIC, "queues": 2}).raise_for_status()
    credit_url, order_url = f"sqlite:///{tmp_path}/credit.db", f"sqlite:///{tmp_path}/order.db"
    order = ServiceProcess("order", tmp_path, {"ORDER_DATABASE_URL": order_url, "ORDER_BROKER_URL": broker.url}).start()
    credit = ServiceProcess("credit", tmp_path, {"CREDIT_DATABASE_URL": credit_url, "CREDIT_BROKER_URL": broker.url,
                                                 "CREDIT_WAIT_SECONDS": "1"}).start()
    ledger = create_db_engine(credit_url, pool_size=1)
    try:
        place_orders(order.url, 24, refunds=3)
        with TransactionProducer(broker.url, "not-an-order-service", RolledBack(), check_backs=False) as halves:
            halves.send_in_transaction(TOPIC, '{"order_id": "never", "user_id": "user-0", "amount": "999.00"}')  # rolled back
        deadline = time.monotonic() + 120
        while (entries := ledger.connect().execute(select(func.count()).select_from(CreditRecord)).scalar_one()) < 27:
            assert time.monotonic() < deadline, f"{entries} ledger entries"
            time.sleep(0.5)
        settings = job.AggregateSettings(credit_database_url=credit_url, order_database_url=order_url, output_dir=str(tmp_path / "spark"),
                                         partitions=2, from_topic=True, broker_url=broker.url)
        agreed = job.run(settings, spark=spark)
        assert agreed.topic is not None and agreed.topic.agrees, agreed.topic
        assert (agreed.topic.messages, agreed.topic.ledger_entries) == (27, 27)
        assert agreed.clean and agreed.report["topic"]["agrees"] is True

        with ledger.begin() as tx:
            lost = tx.execute(select(CreditRecord.order_id).where(CreditRecord.kind == "order").limit(1)).scalar_one()
            tx.execute(delete(CreditRecord).where(CreditRecord.order_id == lost, CreditRecord.kind == "order"))
        disagreed = job.run(settings, spark=spark)
        assert disagreed.topic is not None and not disagreed.topic.agrees
        assert lost in disagreed.topic.only_on_topic or lost in disagreed.topic.differing
        assert disagreed.exit_code == job.EXIT_PROBLEMS
    finally:
        ledger.dispose()
        credit.stop()
        order.stop()
