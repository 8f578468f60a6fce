# queen — the broker on Debian 12, built and run as in the README, by the same install script.
#
#   docker build -t queen .
#   docker run -d --name queen -p 6632:6632 -v queen-data:/var/lib/queen/raft queen
#
# With no QUEEN_PG_URL the node runs its embedded PostgreSQL under QUEEN_DATA_DIR, the volume
# below (the path is the one the 0.15 image used, so `-v queen-data:/var/lib/queen/raft` works
# as before). Several nodes share one database with QUEEN_PG_URL (or PG_HOST, PG_PORT, PG_USER,
# PG_PASSWORD, PG_DB); see deploy/kubernetes/ and docs/operations.md.
#
# The S3 sink (docs/s3-sink.md) is configured by the environment at `docker run`, never baked
# into the image; the secret key belongs in a secret store, not in a Dockerfile or a manifest:
#   QUEEN_S3_EMBEDDED=true  QUEEN_S3_QUEUES=orders (or *)
#   QUEEN_S3_ENDPOINT=http://minio:9000  QUEEN_S3_REGION=us-east-1  QUEEN_S3_PATH_STYLE=true
#   QUEEN_S3_BUCKET=lake  QUEEN_S3_ACCESS_KEY=...  QUEEN_S3_SECRET_KEY=...
#   optional: QUEEN_S3_FORMAT, QUEEN_S3_COMPRESSION, QUEEN_S3_PREFIX, QUEEN_S3_START,
#   QUEEN_S3_MAX_WINDOW_MS, QUEEN_S3_MEMORY_MB (size the container's memory for the broker plus
#   this plus one closing window), QUEEN_S3_SHUTDOWN_GRACE_MS; QUEEN_ENCRYPTION_KEY for sealed
#   queues. SIGTERM drains (up to QUEEN_SHUTDOWN_TIMEOUT_MS, 30 s, plus the sink's grace, 30 s):
#   give `docker stop` a --time of 90.
#
# scripts/check-dockerfile.sh runs these RUN steps in a Debian 12 chroot, for machines with no
# container runtime.
FROM debian:12

ENV DEBIAN_FRONTEND=noninteractive
WORKDIR /opt/queen/src

# The same script as `make run`: the build tools, the libraries and the PostgreSQL server
# binaries (no system cluster). make comes first: a bare Debian image lacks it. Versions are
# Debian 12's of the day (pinning them would break the build at the next security update).
COPY scripts/ scripts/
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends make ca-certificates \
 && scripts/install-deps.sh run \
 && rm -rf /var/lib/apt/lists/*

COPY Makefile ./
COPY src/ src/
RUN make build/release/queen \
 && install -m 0755 build/release/queen /usr/local/bin/queen \
 && rm -rf build

# A non-root user owns the data directory; the embedded PostgreSQL runs as that user.
RUN groupadd --system --gid 10001 queen \
 && useradd --system --uid 10001 --gid queen --home-dir /var/lib/queen --shell /usr/sbin/nologin queen \
 && mkdir -p /var/lib/queen/raft \
 && chown -R queen:queen /var/lib/queen \
 && chmod 0700 /var/lib/queen/raft

ENV QUEEN_DATA_DIR=/var/lib/queen/raft \
    HOST=0.0.0.0 \
    PORT=6632
VOLUME ["/var/lib/queen/raft"]
EXPOSE 6632
# numeric, so that Kubernetes' runAsNonRoot can check it
USER 10001:10001
WORKDIR /var/lib/queen
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/queen"]
