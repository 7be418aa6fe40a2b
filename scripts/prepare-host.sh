#!/usr/bin/env bash
# Installs what running sandboxes needs on a Debian machine: bubblewrap (bwrap) and setpriv (util-linux).
# Idempotent, no questions asked; run as root. The docker backend's prerequisites come with that backend.
set -euo pipefail
missing=()
command -v bwrap >/dev/null || missing+=(bubblewrap)
command -v setpriv >/dev/null || missing+=(util-linux)
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null; }
fi
echo "== bwrap $(bwrap --version | cut -d' ' -f2), setpriv present"
