"""The job on a real standalone Spark cluster (a master and a worker from the pyspark install), not local[*].

The job runs as a separate process, as `halfmq aggregate` would: its JDBC driver jar has to be shipped
to the worker's executor, and the executor does the partitioned reads.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import func, select

from halfmq.jobs.credit_aggregate import APP_NAME, EXIT_CLEAN
from halfmq.jobs.generate_credits import generate
from halfmq.services.credit.models import CreditRecord, SummaryCurrent, SummaryUser
from halfmq.services.database import create_db_engine, migrate
from tests.support.processes import ROOT, free_port


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def spark_env() -> dict[str, str]:
    env = {**os.environ, "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_NO_DAEMONIZE": "1"}
    if "JAVA_HOME" not in env and shutil.which("java"):
        env["JAVA_HOME"] = str(Path(shutil.which("java")).resolve().parents[1])
    return env


@dataclass
class Cluster:
    url: str
    ui: str
    work_dir: Path

    def state(self) -> dict:
        with urllib.request.urlopen(f"{self.ui}/json/", timeout=2) as resp:  # noqa: S310 - the local Spark UI
            return json.load(resp)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[Cluster]:
    tmp = tmp_path_factory.mktemp("spark-standalone")
    port, ui_port, worker_ui = free_port(), free_port(), free_port()
    spark_class = str(spark_home() / "bin" / "spark-class")
    env = spark_env()
    procs: list[subprocess.Popen] = []
    logs = {name: open(tmp / f"{name}.log", "wb") for name in ("master", "worker")}
    try:
        procs.append(subprocess.Popen(
            [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
             "--webui-port", str(ui_port)], env=env, stdout=logs["master"], stderr=subprocess.STDOUT, cwd=tmp))
        procs.append(subprocess.Popen(
            [spark_class, "org.apache.spark.deploy.worker.Worker", f"spark://127.0.0.1:{port}", "--host", "127.0.0.1",
             "--webui-port", str(worker_ui), "--cores", "1", "--memory", "1g", "--work-dir", str(tmp / "work")],
            env=env, stdout=logs["worker"], stderr=subprocess.STDOUT, cwd=tmp))
        found = Cluster(f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{ui_port}", tmp / "work")
        deadline = time.monotonic() + 90
        while True:
            for proc in procs:
                if proc.poll() is not None:
                    pytest.fail(f"a Spark daemon exited with {proc.returncode}:\n" + "".join(
                        (tmp / f"{n}.log").read_text(errors="replace")[-3000:] for n in logs))
            try:
                if any(w.get("state") == "ALIVE" for w in found.state().get("workers", [])):
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("the Spark worker did not register with the master within 90s:\n"
                            + (tmp / "worker.log").read_text(errors="replace")[-3000:])
            time.sleep(0.5)
        yield found
    finally:
        for proc in reversed(procs):  # by pid, worker first: it takes its executors down with it
            _stop(proc)
        for log in logs.values():
            log.close()


def test_the_job_runs_on_a_standalone_cluster_and_publishes_the_right_totals(cluster: Cluster, tmp_path: Path) -> None:
    credit_url, order_url = f"sqlite:///{tmp_path}/credit.db", f"sqlite:///{tmp_path}/order.db"
    credit, order = create_db_engine(credit_url, pool_size=2), create_db_engine(order_url, pool_size=2)
    migrate("credit", credit)
    migrate("order", order)
    generated = generate(credit_url, order_url, 800, users=12, days=5, seed=3)

    env = {**spark_env(), "SPARK_MASTER": cluster.url, "CREDIT_DATABASE_URL": credit_url, "ORDER_DATABASE_URL": order_url,
           "AGGREGATE_OUTPUT_DIR": str(tmp_path / "spark"), "AGGREGATE_PARTITIONS": "3", "AGGREGATE_DRIVER_MEMORY": "1g"}
    done = subprocess.run([sys.executable, "-m", "halfmq.jobs.credit_aggregate"], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=240)
    assert done.returncode == EXIT_CLEAN, done.stdout[-3000:] + done.stderr[-5000:]
    assert f"master={cluster.url}" in done.stderr
    assert "partitions=3" in done.stderr

    report = json.loads((tmp_path / "spark" / "reconciliation.json").read_text())
    assert report["orders_committed"] == report["credits"] == 800
    assert report["missing_credits"] == report["orphan_credits"] == report["balance_mismatches"] == []

    with credit.connect() as conn:
        run_id = conn.scalar(select(SummaryCurrent.run_id))
        published = dict(conn.execute(select(SummaryUser.user_id, SummaryUser.points).where(SummaryUser.run_id == run_id)).all())
        expected = dict(conn.execute(select(CreditRecord.user_id, func.sum(CreditRecord.points)).group_by(CreditRecord.user_id)).all())
    assert published == expected and sum(published.values()) == generated.points
    assert (tmp_path / "spark" / "latest").read_text().strip() == run_id

    # the work really ran on the cluster: the master lists the finished application, the worker ran its executor
    apps = cluster.state().get("completedapps", [])
    assert any(app.get("name") == APP_NAME for app in apps)
    assert any(cluster.work_dir.glob("app-*/*/stderr"))
    credit.dispose()
    order.dispose()
