FROM node:20-bookworm AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
COPY . .
RUN npm run build && npm prune --omit=dev

# The root filesystem bwrap sandboxes see as /: scripts/prepare-host.sh builds it with debootstrap (and installs
# tools this stage throws away); only its unpacked copy is kept.
FROM debian:bookworm AS rootfs
COPY scripts/prepare-host.sh /prepare-host.sh
RUN apt-get update && SVC_CACHE_DIR=/var/cache/svc bash /prepare-host.sh && rm -f /var/cache/svc/rootfs.tar

# api, scheduler and projector: no sandbox backend needed.
FROM node:20-bookworm-slim AS service
WORKDIR /app
COPY --from=build /app /app
# Two malloc arenas and a 4 MB young generation keep the server's RSS small through a long life; both only apply when
# the process starts (docs/design.md, "Memory settings of svc serve").
ENV SVC_DATA_DIR=/app/data MALLOC_ARENA_MAX=2
EXPOSE 8080
CMD ["node", "--max-semi-space-size=4", "--heap-growing-percent=25", "dist/cli/main.js", "serve", "--host", "0.0.0.0", "--port", "8080"]

# Runners: bubblewrap, setpriv and mkfs.ext4 beside the sandboxes' root filesystem. Run privileged, as root
# (compose.yaml says why).
FROM service AS runner
RUN apt-get update \
  && apt-get install -y --no-install-recommends bubblewrap util-linux e2fsprogs \
  && rm -rf /var/lib/apt/lists/*
COPY --from=rootfs /var/cache/svc /var/cache/svc
ENV SVC_CACHE_DIR=/var/cache/svc SVC_SANDBOX=bwrap

# The default target: every role in one container, as before the roles were split (no sandbox backend in it).
FROM service
