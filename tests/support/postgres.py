"""The tests' throwaway PostgreSQL cluster: the one the benchmarks use too (``halfmq.cli.processes.postgres_cluster``)."""

from halfmq.cli.processes.postgres_cluster import PostgresCluster

__all__ = ["PostgresCluster"]
