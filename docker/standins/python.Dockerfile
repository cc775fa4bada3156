# Stand-in for python:3.11-slim-bookworm: Debian's Python 3.11 in a venv at /usr/local, so that
# `python`, `pip` and pip-installed scripts live in /usr/local/bin as in the official image.
FROM halfmq-standin/bookworm
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 python3-venv \
 && rm -rf /var/lib/apt/lists/* \
 && python3 -m venv /usr/local
ENV LANG=C.UTF-8
CMD ["python3"]
