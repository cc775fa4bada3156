# Stand-in for prom/prometheus (the compose `monitoring` profile) where no registry answers: Debian's
# prometheus (2.42 in bookworm: the config and rules use nothing newer), run as the image runs it.
FROM halfmq-standin/bookworm
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus wget \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /prometheus
ENTRYPOINT ["/usr/bin/prometheus"]
