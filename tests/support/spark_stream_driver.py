"""A Spark driver of its own for the source's restart tests: ``python -m tests.support.spark_stream_driver URL TOPIC OUT CHECKPOINT MODE``.

It streams ``TOPIC`` from the broker at ``URL`` into Parquet under ``OUT`` (Spark's file sink, which records each
micro-batch's files in ``OUT/_spark_metadata`` once the batch is done) with its offsets in ``CHECKPOINT``. MODE
``run`` keeps reading every half second until it is killed; ``available-now`` reads what is there and exits 0.
A test kills the first kind with SIGKILL, as a crashed driver, and finishes with the second on the same checkpoint.
"""

from __future__ import annotations

import sys

from halfmq.jobs.credit_aggregate import AggregateSettings, build_spark
from halfmq.spark import register


def main(url: str, topic: str, out: str, checkpoint: str, mode: str) -> int:
    spark = build_spark(AggregateSettings(spark_master="local[1]", partitions=1), dialects=(), missing_drivers_ok=True)
    register(spark)
    stream = (spark.readStream.format("halfmq").option("url", url).option("topics", topic).option("timeoutSeconds", "5")
              .option("maxMessagesPerTrigger", "25").load())
    writer = stream.writeStream.format("parquet").option("path", out).option("checkpointLocation", checkpoint)
    writer = writer.trigger(availableNow=True) if mode == "available-now" else writer.trigger(processingTime="500 milliseconds")
    query = writer.start()
    print("streaming", flush=True)
    query.awaitTermination()
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:6]))
