#!/bin/sh
# Builds the in-sandbox svc as a static binary (no dependency on the sandbox image), per architecture available.
set -eu
cd "$(dirname "$0")/.."
mkdir -p dist/svc
src="broker/svc/main.c broker/svc/init.c broker/svc/http.c broker/svc/json.c broker/svc/buf.c"
flags="-static -Os -s -Wall -Wextra -Werror -Wno-format-truncation -pthread"
cc $flags -o dist/svc/svc-amd64.tmp $src && mv dist/svc/svc-amd64.tmp dist/svc/svc-amd64
echo "built dist/svc/svc-amd64 ($(wc -c < dist/svc/svc-amd64) bytes)"
if command -v aarch64-linux-gnu-gcc >/dev/null 2>&1; then
  aarch64-linux-gnu-gcc $flags -o dist/svc/svc-arm64 $src
  echo "built dist/svc/svc-arm64"
fi
