#!/usr/bin/env bash
# Installs what sandboxes need on a Debian machine, idempotently and without questions (run as root):
# bubblewrap and setpriv for the bwrap backend; docker.io and a locally built base image for the docker backend
# (no registry is reachable: the image is a debootstrap'ed Debian, cached in $SVC_CACHE_DIR).
set -euo pipefail
cache=${SVC_CACHE_DIR:-/var/cache/svc-ci}
missing=()
command -v bwrap >/dev/null || missing+=(bubblewrap)
command -v setpriv >/dev/null || missing+=(util-linux)
command -v dockerd >/dev/null || missing+=(docker.io)
command -v debootstrap >/dev/null || missing+=(debootstrap)
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null 2>&1 \
    || { apt-get update >/dev/null && apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null; }
fi
mkdir -p "$cache"
if [ ! -s "$cache/rootfs.tar" ]; then
  echo "== building the base image root filesystem (debootstrap, about a minute, cached in $cache)"
  rm -rf "$cache/rootfs"
  debootstrap --variant=minbase bookworm "$cache/rootfs" http://deb.debian.org/debian >"$cache/debootstrap.log" 2>&1
  tar -C "$cache/rootfs" -cf "$cache/rootfs.tar.tmp" . && mv "$cache/rootfs.tar.tmp" "$cache/rootfs.tar"
  rm -rf "$cache/rootfs"
fi
echo "== bwrap $(bwrap --version | cut -d' ' -f2), $(dockerd --version | cut -d, -f1), base image tarball $(du -h "$cache/rootfs.tar" | cut -f1)"
