from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession for the unit tests (local[2], no UI, 2 shuffle partitions, UTC).

    Built by the job's own builder with every JDBC driver that is installed: Spark allows one
    session per process and its classpath is fixed when the JVM starts, so the integration tests
    (which need the drivers) can share it whichever runs first.
    """
    from halfmq.jobs.credit_aggregate import AggregateSettings, build_spark

    session = build_spark(AggregateSettings(spark_master="local[2]", partitions=2),
                          dialects=("sqlite", "postgresql"), missing_drivers_ok=True)
    yield session
    session.stop()
