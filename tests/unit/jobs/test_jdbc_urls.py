"""SQLAlchemy URLs → what Spark's JDBC source needs, and which driver jars it gets."""

from __future__ import annotations

import pytest

from halfmq.jobs.credit_aggregate import (
    AggregateError,
    AggregateSettings,
    DriverClasspath,
    JdbcDriverMissing,
    jdbc_classpath,
    to_jdbc,
)


def test_an_absolute_sqlite_path_becomes_a_jdbc_sqlite_url() -> None:
    target = to_jdbc("sqlite:////var/lib/halfmq/credit.db")
    assert (target.dialect, target.url, target.driver, target.properties) == (
        "sqlite", "jdbc:sqlite:/var/lib/halfmq/credit.db", "org.sqlite.JDBC", {})


def test_a_relative_sqlite_path_is_made_absolute_because_executors_run_elsewhere() -> None:
    assert to_jdbc("sqlite:///./data/credit.db", cwd="/srv/app").url == "jdbc:sqlite:/srv/app/data/credit.db"
    assert to_jdbc("sqlite:///data/../data/order.db", cwd="/srv/app").url == "jdbc:sqlite:/srv/app/data/order.db"


def test_an_in_memory_sqlite_database_is_refused() -> None:
    with pytest.raises(AggregateError, match="in-memory"):
        to_jdbc("sqlite://")
    with pytest.raises(AggregateError, match="in-memory"):
        to_jdbc("sqlite:///:memory:")


def test_a_postgres_url_keeps_credentials_and_ssl_settings_out_of_the_jdbc_url() -> None:
    target = to_jdbc("postgresql+psycopg://halfmq:s3cr%40t@db.example:6543/credit?sslmode=require&application_name=agg")
    assert target.dialect == "postgresql"
    assert target.url == "jdbc:postgresql://db.example:6543/credit"
    assert target.driver == "org.postgresql.Driver"
    assert target.properties == {"user": "halfmq", "password": "s3cr@t", "sslmode": "require", "ApplicationName": "agg"}
    assert "s3cr" not in str(target) and "s3cr" not in repr(target)
    assert target.options() == {"url": target.url, "driver": target.driver, **target.properties}


def test_a_postgres_url_without_port_or_host_gets_the_defaults() -> None:
    assert to_jdbc("postgresql+psycopg://u@db/credit").url == "jdbc:postgresql://db:5432/credit"
    assert to_jdbc("postgresql://u@/credit").url == "jdbc:postgresql://localhost:5432/credit"
    assert to_jdbc("postgresql+psycopg2://u@db/credit").dialect == "postgresql"


def test_an_ipv6_postgres_host_is_bracketed() -> None:
    assert to_jdbc("postgresql://u@[::1]:5433/credit").url == "jdbc:postgresql://[::1]:5433/credit"


def test_a_postgres_url_without_a_database_name_is_refused() -> None:
    with pytest.raises(AggregateError, match="no database name"):
        to_jdbc("postgresql://u@db:5432")


def test_other_databases_are_refused_with_what_is_supported() -> None:
    with pytest.raises(AggregateError, match="SQLite and PostgreSQL"):
        to_jdbc("mysql+pymysql://u@db/credit")
    with pytest.raises(AggregateError, match="not a database URL"):
        to_jdbc("not a url")


def test_the_local_debian_jars_are_used_for_the_dialects_in_play() -> None:
    classpath = jdbc_classpath(AggregateSettings(), {"postgresql", "sqlite"}, exists=lambda _: True)
    assert classpath == DriverClasspath(jars=("/usr/share/java/postgresql.jar", "/usr/share/java/sqlite-jdbc.jar"))
    assert jdbc_classpath(AggregateSettings(), {"sqlite"}, exists=lambda _: True).jars == ("/usr/share/java/sqlite-jdbc.jar",)


def test_a_missing_sqlite_jar_fails_naming_the_jar_the_debian_package_and_the_maven_alternative() -> None:
    with pytest.raises(JdbcDriverMissing) as err:
        jdbc_classpath(AggregateSettings(), {"sqlite"}, exists=lambda _: False)
    message = str(err.value)
    assert "/usr/share/java/sqlite-jdbc.jar" in message
    assert "apt-get install libxerial-sqlite-jdbc-java" in message
    assert "SPARK_JDBC_PACKAGES=org.xerial:sqlite-jdbc:" in message


def test_a_missing_postgres_jar_fails_naming_its_debian_package() -> None:
    with pytest.raises(JdbcDriverMissing, match="apt-get install libpostgresql-jdbc-java"):
        jdbc_classpath(AggregateSettings(), {"postgresql"}, exists=lambda p: "sqlite" in p)


def test_maven_packages_replace_local_jars_when_set() -> None:
    settings = AggregateSettings(spark_jdbc_packages="org.postgresql:postgresql:42.7.4")
    assert jdbc_classpath(settings, {"postgresql"}, exists=lambda _: False) == DriverClasspath(packages="org.postgresql:postgresql:42.7.4")


def test_jar_overrides_must_exist() -> None:
    settings = AggregateSettings(spark_jdbc_jars="/opt/jdbc/sqlite.jar, /opt/jdbc/pg.jar")
    assert jdbc_classpath(settings, {"sqlite"}, exists=lambda _: True).jars == ("/opt/jdbc/sqlite.jar", "/opt/jdbc/pg.jar")
    with pytest.raises(JdbcDriverMissing, match="/opt/jdbc/pg.jar"):
        jdbc_classpath(settings, {"sqlite"}, exists=lambda p: p.endswith("sqlite.jar"))


def test_missing_jars_can_be_tolerated_for_sessions_that_never_read_a_database() -> None:
    assert jdbc_classpath(AggregateSettings(), {"sqlite", "postgresql"}, missing_ok=True, exists=lambda _: False) == DriverClasspath()
