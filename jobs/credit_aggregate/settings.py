"""Where the job reads and writes, and the few names every stage shares (its app name, exit codes, logger)."""

from __future__ import annotations

import logging

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

log = logging.getLogger("halfmq.aggregate")

APP_NAME = "halfmq-credit-aggregate"
EXIT_CLEAN, EXIT_PROBLEMS, EXIT_ERROR = 0, 1, 2


class AggregateSettings(BaseSettings):
    """Where the job reads and writes; every value has a default that works with `halfmq up`'s files."""

    model_config = SettingsConfigDict(populate_by_name=True, extra="ignore")

    spark_master: str = Field("local[*]", validation_alias="SPARK_MASTER")
    credit_database_url: str = Field("sqlite:///./data/credit.db", validation_alias="CREDIT_DATABASE_URL")
    order_database_url: str = Field("sqlite:///./data/order.db", validation_alias="ORDER_DATABASE_URL")
    output_dir: str = Field("./data/spark", validation_alias="AGGREGATE_OUTPUT_DIR")
    partitions: int = Field(4, ge=1, le=1024, validation_alias="AGGREGATE_PARTITIONS",
                            description="JDBC read partitions of the ledger, and shuffle partitions")
    spark_jdbc_packages: str | None = Field(None, validation_alias="SPARK_JDBC_PACKAGES",
                                            description="Maven coordinates (comma-separated) for spark.jars.packages")
    spark_jdbc_jars: str | None = Field(None, validation_alias="SPARK_JDBC_JARS",
                                        description="comma-separated local JDBC driver jars, instead of Debian's")
    keep_runs: int = Field(2, ge=1, validation_alias="AGGREGATE_KEEP_RUNS",
                           description="published runs (and Parquet run directories) kept, the newest included")
    driver_host: str = Field("127.0.0.1", validation_alias="AGGREGATE_DRIVER_HOST",
                             description="address the driver binds to and advertises to executors")
    driver_memory: str = Field("2g", validation_alias="AGGREGATE_DRIVER_MEMORY",
                               description="spark.driver.memory (local mode: the executors live in the driver)")
    java_options: str = Field("-XX:TieredStopAtLevel=1", validation_alias="AGGREGATE_JAVA_OPTIONS",
                              description="spark.driver.extraJavaOptions; the default (C1 JIT only) saves ~2 s of "
                                          "JVM warm-up on a short job; set it empty for long jobs over huge ledgers")
    from_topic: bool = Field(False, validation_alias="AGGREGATE_FROM_TOPIC",
                             description="also aggregate straight from the order topic (halfmq.spark) and check it agrees with the ledger")
    order_topic: str = Field("ORDER_TOPIC", validation_alias="AGGREGATE_ORDER_TOPIC", description="the topic the orders are on")
    broker_url: str | None = Field(None, validation_alias="AGGREGATE_BROKER_URL",
                                   description="the broker (or a set's nodes, comma-separated) the topic is read from; None: $HALFMQ_URL")
    broker_token: str | None = Field(None, validation_alias="AGGREGATE_BROKER_TOKEN",
                                     description="a token with subscribe on the topic; None: $HALFMQ_TOKEN")
    points_per_unit: int = Field(1, ge=1, validation_alias="CREDIT_POINTS_PER_UNIT",
                                 description="the credit service's rate (its own variable), to credit the topic's orders the same way")
