# One image for every halfmq component: broker, order, credit and the Spark job.
FROM python:3.11-slim-bookworm

# Java for Spark (local mode inside the container) and Debian's JDBC drivers for its JDBC source.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      openjdk-17-jre-headless libpostgresql-jdbc-java libxerial-sqlite-jdbc-java \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY pyproject.toml README.md alembic.ini ./
COPY broker ./broker
COPY services ./services
COPY jobs ./jobs
COPY migrations ./migrations
COPY halfmq_cli ./halfmq_cli
COPY bench ./bench
RUN pip install --no-cache-dir .

RUN useradd --create-home --uid 10001 halfmq && mkdir -p /data && chown halfmq /data
USER halfmq
ENV PYTHONUNBUFFERED=1
CMD ["halfmq", "--help"]
