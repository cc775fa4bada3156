#!/usr/bin/env python3
# Source: /work/shared/bench/peers/spark_bench.py (copied into the project for issue 18; run as a file by the peers' venv python).
"""Spark local[2] timings (pyspark 4.x, Java 17).

Each rep runs in a fresh Python process (--one) so JVM start-up is included:
  startup_to_first_action_s : SparkSession.builder.master('local[2]').getOrCreate() + spark.range(1).count()
  create_df_from_list_s     : build 1,000,000 (user_id, points, ts) tuples in Python (timed separately)
                              + createDataFrame(list, schema)
  agg_from_list_s           : groupBy(user_id).sum(points) over that DataFrame, collected to the driver
  parquet_write_s           : write the 1M rows to Parquet under /tmp (untimed prerequisite, reported)
  agg_from_parquet_s        : read Parquet + groupBy/sum + collect
10,000 distinct users. Prints one JSON line with medians over --reps.
Usage: /tmp/halfmq-peers/bin/python spark_bench.py [--reps 3] [--rows 1000000]
"""
import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time


def one(rows):
    t0 = time.perf_counter()
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
    spark = (SparkSession.builder.master("local[2]").appName("bench")
             .config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1").config("spark.sql.shuffle.partitions", "4")
             .config("spark.driver.memory", "4g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spark.range(1).count()
    r = {"startup_to_first_action_s": time.perf_counter() - t0}

    rnd = random.Random(1)
    t = time.perf_counter()
    data = [(i % 10000, rnd.randint(1, 100), 1_700_000_000 + i) for i in range(rows)]
    r["python_list_build_s"] = time.perf_counter() - t
    schema = T.StructType([T.StructField("user_id", T.LongType()), T.StructField("points", T.LongType()),
                           T.StructField("ts", T.LongType())])
    t = time.perf_counter()
    df = spark.createDataFrame(data, schema)
    r["create_df_from_list_s"] = time.perf_counter() - t
    t = time.perf_counter()
    res = df.groupBy("user_id").agg(F.sum("points").alias("total")).collect()
    r["agg_from_list_s"] = time.perf_counter() - t
    assert len(res) == 10000
    total_list = sum(x["total"] for x in res)

    path = f"/tmp/spark_bench_credits_{os.getpid()}.parquet"
    t = time.perf_counter()
    df.write.mode("overwrite").parquet(path)
    r["parquet_write_s"] = time.perf_counter() - t
    t = time.perf_counter()
    res = spark.read.parquet(path).groupBy("user_id").agg(F.sum("points").alias("total")).collect()
    r["agg_from_parquet_s"] = time.perf_counter() - t
    assert sum(x["total"] for x in res) == total_list
    t = time.perf_counter()
    spark.read.parquet(path).groupBy("user_id").agg(F.sum("points").alias("total")).collect()
    r["agg_from_parquet_warm_s"] = time.perf_counter() - t
    spark.stop()
    shutil.rmtree(path, ignore_errors=True)
    r["pyspark"] = __import__("pyspark").__version__
    print(json.dumps(r))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--one", action="store_true")
    a = ap.parse_args()
    if a.one:
        one(a.rows)
        return
    runs = []
    for _ in range(a.reps):
        out = subprocess.run([sys.executable, __file__, "--one", "--rows", str(a.rows)], capture_output=True,
                             text=True, timeout=600)
        line = [l for l in out.stdout.splitlines() if l.startswith("{")]
        if not line:
            raise RuntimeError(out.stderr[-3000:])
        runs.append(json.loads(line[-1]))
    keys = [k for k in runs[0] if k.endswith("_s")]
    res = {"bench": "spark_local2_credit_agg", "rows": a.rows, "pyspark": runs[0]["pyspark"],
           "java": subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()[0]}
    for k in keys:
        v = [r[k] for r in runs]
        res[k] = {"median": round(statistics.median(v), 2), "min": round(min(v), 2), "max": round(max(v), 2)}
    print(json.dumps(res))


if __name__ == "__main__":
    main()
