from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession with the SQLite and PostgreSQL JDBC drivers, shared by the job's tests.

    Same builder as the unit tests' session: Spark allows one session per process and fixes its
    classpath when the JVM starts, so whichever suite runs first must bring the drivers.
    """
    from halfmq.jobs.credit_aggregate import AggregateSettings, build_spark

    session = build_spark(AggregateSettings(spark_master="local[2]", partitions=2), dialects=("sqlite", "postgresql"))
    yield session
    session.stop()
