"""Settings from the environment, the CLI options, and the exit code for a broken setup."""

from __future__ import annotations

import argparse
import sqlite3
from datetime import UTC
from pathlib import Path

import pytest

from halfmq.cli import aggregate_command
from halfmq.jobs import credit_aggregate as job


def test_settings_have_working_local_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("SPARK_MASTER", "CREDIT_DATABASE_URL", "ORDER_DATABASE_URL", "AGGREGATE_OUTPUT_DIR", "AGGREGATE_PARTITIONS",
                 "SPARK_JDBC_PACKAGES", "SPARK_JDBC_JARS"):
        monkeypatch.delenv(name, raising=False)
    s = job.AggregateSettings()
    assert (s.spark_master, s.credit_database_url, s.order_database_url, s.output_dir, s.partitions) == (
        "local[*]", "sqlite:///./data/credit.db", "sqlite:///./data/order.db", "./data/spark", 4)
    assert s.spark_jdbc_packages is None and s.spark_jdbc_jars is None


def test_settings_come_from_the_documented_environment_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARK_MASTER", "spark://10.0.0.5:7077")
    monkeypatch.setenv("CREDIT_DATABASE_URL", "postgresql+psycopg://u@db/credit")
    monkeypatch.setenv("ORDER_DATABASE_URL", "postgresql+psycopg://u@db/order")
    monkeypatch.setenv("AGGREGATE_OUTPUT_DIR", "/srv/spark")
    monkeypatch.setenv("AGGREGATE_PARTITIONS", "16")
    monkeypatch.setenv("SPARK_JDBC_PACKAGES", "org.postgresql:postgresql:42.7.4")
    s = job.AggregateSettings()
    assert (s.spark_master, s.credit_database_url, s.order_database_url, s.output_dir, s.partitions, s.spark_jdbc_packages) == (
        "spark://10.0.0.5:7077", "postgresql+psycopg://u@db/credit", "postgresql+psycopg://u@db/order", "/srv/spark", 16,
        "org.postgresql:postgresql:42.7.4")


def test_cli_options_override_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARK_MASTER", "local[8]")
    parser = argparse.ArgumentParser()
    aggregate_command.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["aggregate", "--master", "local[1]", "--credit-db", "sqlite:////c.db", "--order-db",
                              "sqlite:////o.db", "--output-dir", "/tmp/out", "--partitions", "3"])
    assert args.func is aggregate_command.cmd_aggregate
    s = job.settings_from_args(args)
    assert (s.spark_master, s.credit_database_url, s.order_database_url, s.output_dir, s.partitions) == (
        "local[1]", "sqlite:////c.db", "sqlite:////o.db", "/tmp/out", 3)


def test_a_missing_jdbc_jar_exits_2_before_spark_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("credit.db", "order.db"):
        sqlite3.connect(tmp_path / name).close()
    monkeypatch.setenv("SPARK_JDBC_JARS", str(tmp_path / "no-such-driver.jar"))
    monkeypatch.delenv("SPARK_JDBC_PACKAGES", raising=False)
    code = job.main(["--credit-db", f"sqlite:///{tmp_path}/credit.db", "--order-db", f"sqlite:///{tmp_path}/order.db",
                     "--output-dir", str(tmp_path / "out")])
    assert code == job.EXIT_ERROR
    assert "no-such-driver.jar" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_missing_database_file_exits_2_with_a_hint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SPARK_JDBC_PACKAGES", "org.xerial:sqlite-jdbc:3.46.1.3")  # whatever jars are installed here
    code = job.main(["--credit-db", f"sqlite:///{tmp_path}/nope.db", "--order-db", f"sqlite:///{tmp_path}/order.db"])
    assert code == job.EXIT_ERROR
    err = capsys.readouterr().err
    assert "nope.db" in err and "does not exist" in err


def test_run_ids_sort_by_time() -> None:
    from datetime import datetime, timedelta

    t = datetime(2026, 11, 22, 6, 52, tzinfo=UTC)
    ids = [job.new_run_id(t + timedelta(microseconds=d)) for d in (0, 1, 1_000_000, 86_400_000_000)]
    assert ids == sorted(ids) and all(len(i) <= 64 for i in ids)
