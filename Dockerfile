# One image for every halfmq component: broker, order, credit and the Spark job.
FROM python:3.11-slim-bookworm

# Java for Spark (local mode inside the container) and Debian's JDBC drivers for its JDBC source.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      openjdk-17-jre-headless libpostgresql-jdbc-java libxerial-sqlite-jdbc-java \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
# Dependencies first, in a layer of their own: a code change does not download pyspark again.
COPY pyproject.toml ./
# The SDK's dependencies and those of the extras the image runs (broker, services, spark, and kafka: the broker's Kafka front).
RUN python -c 'import tomllib; p = tomllib.load(open("pyproject.toml", "rb"))["project"]; extras = p["optional-dependencies"]; print("\n".join(p["dependencies"] + [d for x in ("broker", "services", "spark", "kafka") for d in extras[x]]))' > /tmp/requirements.txt \
 && pip install --no-cache-dir -r /tmp/requirements.txt \
 && rm /tmp/requirements.txt
COPY README.md ./
COPY halfmq ./halfmq
COPY broker ./broker
COPY services ./services
COPY jobs ./jobs
COPY migrations ./migrations
COPY cli ./cli
COPY bench ./bench
RUN pip install --no-cache-dir --no-deps .

# Every directory a volume mounts must exist here and belong to halfmq: Docker gives a new named
# volume the owner of the directory it mounts on, and creates a missing one owned by root.
ARG DATA_DIRS="/data /data/auth /data/broker /data/spark"
RUN useradd --create-home --uid 10001 halfmq && install -d -o halfmq -g halfmq $DATA_DIRS
USER halfmq
ENV PYTHONUNBUFFERED=1
CMD ["halfmq", "--help"]
