"""Spark reads halfmq topics: ``spark.read.format("halfmq")`` and ``spark.readStream.format("halfmq")`` (docs/spark-source.md).

PySpark's Python Data Source API (PySpark 4, the ``spark`` extra): each queue of the topics read is one Spark
partition (or several, ``maxMessagesPerPartition``), read through the SDK's offset read, so Spark, not a consumer
group, owns the offsets and keeps a stream's in its checkpoint. Only committed messages are ever read (read_committed).
The SDK itself never imports this package: ``import halfmq.client`` stays free of pyspark.

    from halfmq.spark import register
    register(spark)
    orders = spark.read.format("halfmq").option("url", "http://127.0.0.1:8080").option("topics", "ORDER_TOPIC").load()
"""

from .offsets import QueueSlice
from .options import InvalidSparkOption, SourceOptions, source_options
from .source import NAME, HalfmqDataSource, SliceUnavailable, register

__all__ = ["NAME", "HalfmqDataSource", "InvalidSparkOption", "QueueSlice", "SliceUnavailable", "SourceOptions", "register", "source_options"]
