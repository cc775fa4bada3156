# Stand-in for postgres:15-bookworm: Debian's PostgreSQL 15 and an entrypoint that does what the
# official one does for halfmq (POSTGRES_USER/PASSWORD/DB, /docker-entrypoint-initdb.d).
FROM halfmq-standin/bookworm
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql-15 \
 && rm -rf /var/lib/apt/lists/* \
 && pg_dropcluster 15 main \
 && install -d -o postgres -g postgres -m 700 /var/lib/postgresql/data \
 && install -d -o postgres -g postgres -m 2775 /var/run/postgresql /docker-entrypoint-initdb.d
COPY postgres-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
ENV PATH=/usr/lib/postgresql/15/bin:$PATH PGDATA=/var/lib/postgresql/data LANG=C.UTF-8
ENTRYPOINT ["docker-entrypoint.sh"]
STOPSIGNAL SIGINT
EXPOSE 5432
CMD ["postgres"]
