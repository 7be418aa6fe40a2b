#!/usr/bin/env bash
# Installs what sandboxes need on a Debian machine, idempotently and without questions (run as root):
# bubblewrap and setpriv for the bwrap backend; docker.io and a locally built base image for the docker backend
# (no registry is reachable: the image is a debootstrap'ed Debian, cached in $SVC_CACHE_DIR). Both backends run on
# that one root filesystem: the tarball is what the docker engine imports as svc-base:bookworm, and its unpacked copy
# ($cache/rootfs, a link to rootfs-<key>) is what bwrap sandboxes see as / (read-only). docs/design.md, "Sandbox
# isolation", says why.
set -euo pipefail
cache=${SVC_CACHE_DIR:-/var/cache/svc-ci}
missing=()
command -v bwrap >/dev/null || missing+=(bubblewrap)
command -v setpriv >/dev/null || missing+=(util-linux)
command -v mkfs.ext4 >/dev/null || missing+=(e2fsprogs)
command -v dockerd >/dev/null || missing+=(docker.io)
command -v debootstrap >/dev/null || missing+=(debootstrap)
# The web app's browser tests drive Debian's chromium (Playwright's own browser downloads are not reachable).
command -v chromium >/dev/null || missing+=(chromium)
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null 2>&1 \
    || { apt-get update >/dev/null && apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null; }
fi
mkdir -p "$cache"

# What the base root filesystem holds. node and python3 are there because stdio MCP servers and agents' scripts are
# mostly one or the other; util-linux (unshare, for the isolation tests) and perl-base come with minbase.
suite=bookworm
packages=nodejs,python3-minimal,ca-certificates,procps
# The cache key: a change of the package list (or of the fix-ups below, by bumping the last word) rebuilds the tarball.
key=$(printf '%s minbase %s etc-v1' "$suite" "$packages" | sha256sum | cut -c1-12)
if [ ! -s "$cache/rootfs.tar" ] || [ "$(cat "$cache/rootfs.key" 2>/dev/null)" != "$key" ]; then
  echo "== building the base image root filesystem (debootstrap, a minute or two, cached in $cache, key $key)"
  rm -rf "$cache/rootfs.build"
  debootstrap --variant=minbase --include="$packages" "$suite" "$cache/rootfs.build" http://deb.debian.org/debian >"$cache/debootstrap.log" 2>&1
  r=$cache/rootfs.build
  # debootstrap copies the host's hostname and resolver into the target: a sandbox must see none of the host's /etc.
  echo svc >"$r/etc/hostname"
  printf '127.0.0.1 localhost svc\n::1 localhost\n' >"$r/etc/hosts"
  : >"$r/etc/resolv.conf"
  rm -f "$r/etc/machine-id" "$r/var/lib/dbus/machine-id"
  # The sandbox users of both backends (uid 1000 agent, 1001 mcp), so tools that look names up find them.
  grep -q '^agent:' "$r/etc/passwd" || echo 'agent:x:1000:1000:agent:/workspace:/bin/bash' >>"$r/etc/passwd"
  grep -q '^mcp:' "$r/etc/passwd" || echo 'mcp:x:1001:1001:mcp:/tmp:/bin/sh' >>"$r/etc/passwd"
  grep -q '^agent:' "$r/etc/group" || echo 'agent:x:1000:' >>"$r/etc/group"
  grep -q '^mcp:' "$r/etc/group" || echo 'mcp:x:1001:' >>"$r/etc/group"
  mkdir -p "$r/workspace" "$r/svc" "$r/run/svc"
  rm -rf "$r/var/cache/apt/archives/"*.deb "$r/var/lib/apt/lists/"*
  tar -C "$r" -cf "$cache/rootfs.tar.tmp" . && mv "$cache/rootfs.tar.tmp" "$cache/rootfs.tar"
  echo "$key" >"$cache/rootfs.key"
  rm -rf "$r"
fi
# The bwrap backend's copy: unpacked once per key, then the link moved over atomically, so a service that resolved
# the link at start keeps a complete tree.
if [ ! -d "$cache/rootfs-$key" ]; then
  echo "== unpacking the root filesystem for bwrap sandboxes into $cache/rootfs-$key"
  rm -rf "$cache/rootfs-$key.tmp"
  mkdir -p "$cache/rootfs-$key.tmp"
  tar -C "$cache/rootfs-$key.tmp" -xf "$cache/rootfs.tar"
  mv "$cache/rootfs-$key.tmp" "$cache/rootfs-$key"
fi
ln -sfn "rootfs-$key" "$cache/rootfs.link" && mv -T "$cache/rootfs.link" "$cache/rootfs"
echo "== bwrap $(bwrap --version | cut -d' ' -f2), $(dockerd --version | cut -d, -f1), base image tarball $(du -h "$cache/rootfs.tar" | cut -f1), root filesystem $cache/rootfs -> rootfs-$key"
