# Stand-in for an image that is Debian packages' programs (`apt:` lines in `images`).
FROM halfmq-standin/bookworm
ARG PACKAGES
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $PACKAGES \
 && rm -rf /var/lib/apt/lists/*
