#!/bin/sh
# Builds the in-sandbox svc (broker/svc/*.c) as static binaries with no dependency on the sandbox image (DESIGN §5):
# dist/svc/svc-<arch> for the system compiler's own architecture, and for the other of amd64/arm64 when its cross
# compiler (aarch64-linux-gnu-gcc or x86_64-linux-gnu-gcc) is installed.
set -eu
cd "$(dirname "$0")/.."
mkdir -p dist/svc
src=$(ls broker/svc/*.c)
flags="-static -Os -s -Wall -Wextra -Werror -std=gnu11"

build() { # compiler arch
  out="dist/svc/svc-$2"
  # shellcheck disable=SC2086
  "$1" $flags -o "$out.tmp.$$" $src || { rm -f "$out.tmp.$$"; return 1; }
  mv "$out.tmp.$$" "$out" || return 1
  echo "built $out ($(wc -c < "$out") bytes, $1)"
}

case "$(cc -dumpmachine)" in
  x86_64-*) native=amd64; other=arm64; cross=aarch64-linux-gnu-gcc ;;
  aarch64-*) native=arm64; other=amd64; cross=x86_64-linux-gnu-gcc ;;
  *) echo "build-svc: cc targets $(cc -dumpmachine), neither amd64 nor arm64" >&2; exit 1 ;;
esac
build cc "$native"
if command -v "$cross" >/dev/null 2>&1; then
  build "$cross" "$other" || echo "build-svc: $cross is installed but the $other build failed (missing static libc for it?); dist/svc/svc-$other not built" >&2
else
  echo "build-svc: $cross not installed; no dist/svc/svc-$other"
fi
