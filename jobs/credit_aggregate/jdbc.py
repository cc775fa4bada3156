"""SQLAlchemy URLs → what Spark's JDBC source needs; which driver jars it gets; how the ledger read is split.

Plain values in, plain values out: tests drive them without Spark or a database.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from .settings import AggregateSettings


class AggregateError(Exception):
    """A problem the user can fix (configuration, missing driver, missing database); exit code 2."""


class JdbcDriverMissing(AggregateError):
    pass


@dataclass(frozen=True)
class JdbcTarget:
    """A database as Spark's JDBC source wants it; credentials are properties, never part of ``url``."""

    dialect: str  # "sqlite" | "postgresql"
    url: str
    driver: str
    properties: dict[str, str] = field(default_factory=dict, repr=False)  # may hold the password

    def options(self) -> dict[str, str]:
        return {"url": self.url, "driver": self.driver, **self.properties}

    def __str__(self) -> str:
        return self.url


JDBC_DRIVERS = {"sqlite": "org.sqlite.JDBC", "postgresql": "org.postgresql.Driver"}
# Debian's jars (and the package that installs each), and the Maven coordinates to use instead where
# Maven Central is reachable. Debian's sqlite-jdbc loads its native part from libxerial-sqlite-jdbc-jni,
# which the -java package depends on; the Maven jar carries its own native libraries.
DEBIAN_JARS = {
    "sqlite": ("/usr/share/java/sqlite-jdbc.jar", "libxerial-sqlite-jdbc-java"),
    "postgresql": ("/usr/share/java/postgresql.jar", "libpostgresql-jdbc-java"),
}
MAVEN_PACKAGES = {"sqlite": "org.xerial:sqlite-jdbc:3.46.1.3", "postgresql": "org.postgresql:postgresql:42.7.4"}
# libpq-style query parameters of a SQLAlchemy URL → pgjdbc connection properties
_PG_PARAMS = {"sslmode": "sslmode", "sslrootcert": "sslrootcert", "sslcert": "sslcert", "sslkey": "sslkey",
              "sslpassword": "sslpassword", "application_name": "ApplicationName", "connect_timeout": "connectTimeout",
              "options": "options"}


def dialect_of(sqlalchemy_url: str) -> str:
    from sqlalchemy.engine import make_url

    try:
        backend = make_url(sqlalchemy_url).get_backend_name()
    except Exception as exc:  # noqa: BLE001 - sqlalchemy raises ArgumentError and friends
        raise AggregateError(f"not a database URL: {sqlalchemy_url!r} ({exc})") from None
    if backend in ("postgresql", "postgres"):
        return "postgresql"
    if backend == "sqlite":
        return "sqlite"
    raise AggregateError(f"the Spark job supports SQLite and PostgreSQL, not {backend!r} ({sqlalchemy_url!r})")


def to_jdbc(sqlalchemy_url: str, cwd: str | None = None) -> JdbcTarget:
    """SQLAlchemy URL → JDBC URL, driver class and connection properties.

    ``sqlite:///rel.db`` is made absolute against ``cwd`` (Spark executors run elsewhere);
    ``postgresql+psycopg://user:pw@host:port/db?sslmode=require`` → ``jdbc:postgresql://host:port/db`` with
    user, password and sslmode as properties.
    """
    from sqlalchemy.engine import make_url

    dialect = dialect_of(sqlalchemy_url)
    url = make_url(sqlalchemy_url)
    if dialect == "sqlite":
        database = url.database or ""
        if database in ("", ":memory:") or database.startswith("file::memory:"):
            raise AggregateError(f"an in-memory SQLite database cannot be read by Spark: {sqlalchemy_url!r}")
        if database.startswith("file:"):
            raise AggregateError(f"SQLite URI filenames are not supported by the job, give a path: {sqlalchemy_url!r}")
        path = os.path.normpath(os.path.join(cwd or os.getcwd(), database))
        return JdbcTarget("sqlite", f"jdbc:sqlite:{path}", JDBC_DRIVERS["sqlite"])
    if not url.database:
        raise AggregateError(f"no database name in {url.render_as_string(hide_password=True)!r}")
    if "host" in url.query and not url.host:
        raise AggregateError("PostgreSQL over a Unix socket is not supported by JDBC; give host and port")
    host = url.host or "localhost"
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    properties: dict[str, str] = {}
    if url.username:
        properties["user"] = url.username
    if url.password:
        properties["password"] = str(url.password)
    for key, value in url.query.items():
        value = value[-1] if isinstance(value, tuple) else value
        properties[_PG_PARAMS.get(key, key)] = str(value)
    return JdbcTarget("postgresql", f"jdbc:postgresql://{host}:{url.port or 5432}/{url.database}",
                      JDBC_DRIVERS["postgresql"], properties)


@dataclass(frozen=True)
class DriverClasspath:
    jars: tuple[str, ...] = ()
    packages: str | None = None


def jdbc_classpath(settings: AggregateSettings, dialects: Iterable[str], *, missing_ok: bool = False,
                   exists=os.path.isfile) -> DriverClasspath:
    """Which JDBC driver jars Spark gets: ``SPARK_JDBC_PACKAGES`` from Maven, else local jars that must exist."""
    wanted = sorted(set(dialects))
    if settings.spark_jdbc_packages:
        return DriverClasspath(packages=settings.spark_jdbc_packages.strip())
    if settings.spark_jdbc_jars:
        jars = tuple(j.strip() for j in settings.spark_jdbc_jars.split(",") if j.strip())
        absent = [j for j in jars if not exists(j)]
        if absent and not missing_ok:
            raise JdbcDriverMissing(f"SPARK_JDBC_JARS names jar(s) that do not exist: {', '.join(absent)}")
        return DriverClasspath(jars=tuple(j for j in jars if exists(j)))
    jars: list[str] = []
    for dialect in wanted:
        jar, package = DEBIAN_JARS[dialect]
        if exists(jar):
            jars.append(jar)
        elif not missing_ok:
            raise JdbcDriverMissing(
                f"the {dialect} JDBC driver jar {jar} is missing. Install it with "
                f"`apt-get install {package}`, or let Spark fetch it from Maven Central with "
                f"SPARK_JDBC_PACKAGES={MAVEN_PACKAGES[dialect]} (or point SPARK_JDBC_JARS at a jar you have)."
            )
    return DriverClasspath(jars=tuple(jars))


@dataclass(frozen=True)
class IdBounds:
    """The ledger's ``credit_records.id`` range and row count, as the preflight saw them."""

    low: int | None
    high: int | None
    rows: int


def read_partitions(bounds: IdBounds, partitions: int) -> int:
    """How many range queries Spark's JDBC source will issue for the ledger (it never splits finer than one id)."""
    if bounds.low is None or bounds.high is None or partitions <= 1 or bounds.high <= bounds.low:
        return 1
    return min(partitions, bounds.high + 1 - bounds.low)
