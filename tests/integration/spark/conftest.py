from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession (local[1]) that knows format("halfmq"): the job's builder, as the job's tests' session,
    since Spark allows one session per process and whichever suite runs first fixes the JDBC drivers on its classpath."""
    from halfmq.jobs.credit_aggregate import AggregateSettings, build_spark
    from halfmq.spark import register

    session = build_spark(AggregateSettings(spark_master="local[1]", partitions=1), dialects=("sqlite", "postgresql"),
                          missing_drivers_ok=True)
    register(session)
    yield session
    session.stop()
