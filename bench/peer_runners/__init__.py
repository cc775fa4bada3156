"""The peers' benchmark scripts: redis-py, nats-py, aio-pika, asyncpg/SQLite outbox, fsync, HTTP baselines, Spark.

Not imported by halfmq: each script is run as a file by the peers' own venv
python (their client libraries are no dependency of halfmq), by
``halfmq bench peers`` (:mod:`halfmq.bench.peer_command`). One exception:
``http_app`` needs only FastAPI, so the in-run HTTP baselines serve it too
(``servers.BaselineApp``), and both figures come from one app. They are a package
only so the wheel carries them beside the bench; ``setup.sh`` installs the
peer servers and that venv. Source: /work/shared/bench/peers, tidied.
"""
