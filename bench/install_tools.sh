#!/bin/sh
# Installs what `deno task bench` needs on Debian/Ubuntu: wrk (throughput), h2load from nghttp2-client
# (fixed-rate latency), taskset from util-linux (CPU pinning); then checks Bun 1.4.5 through npx (the Bun
# rows and the fast fake upstream; without it those rows are reported as not measured).
set -eu

need=""
command -v wrk >/dev/null 2>&1 || need="$need wrk"
command -v h2load >/dev/null 2>&1 || need="$need nghttp2-client"
command -v taskset >/dev/null 2>&1 || need="$need util-linux"

if [ -n "$need" ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  echo "installing:$need" >&2
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends $need
fi

if command -v npx >/dev/null 2>&1 && npx -y bun@1.4.5 --version >/dev/null 2>&1; then
  echo "bun 1.4.5 available through npx" >&2
else
  echo "bun 1.4.5 not available (needs npx and the npm registry): Bun rows will be skipped" >&2
fi
