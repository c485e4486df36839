#!/usr/bin/env bash
# What `npm test` needs besides Node, obtained when the machine lacks it, so that the README's `npm test` passes on a
# fresh Debian 12 clone (issue 30 item 9) and no test skips. Run by `npm test` before jest; test/support/tools.ts
# finds what it put in the user cache. A tool already on PATH (or named by its variable) is used as it is.
#   as root with apt-get   apt-get install -y what is missing: prometheus (promtool), redis-server, chromium
#   otherwise              promtool built once from the Go module proxy with the machine's Go; redis-server unpacked
#                          from Debian's packages (apt-get download, no root); chromium cannot be had without root
# Anything still missing is listed with how to get it, and the run stops before jest.
set -euo pipefail

PROMTOOL_VERSION=v0.316.0 # Prometheus 3.x's Go module version; keep in step with test/support/tools.ts
CACHE_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/context-guardian"
CHROMIUM="${CHROMIUM_PATH:-/usr/bin/chromium}"
missing=()

has_promtool() { [[ -n "${PROMTOOL:-}" ]] || command -v promtool >/dev/null || [[ -x "$CACHE_DIR/promtool-$PROMTOOL_VERSION/promtool" ]]; }
# test/support/redis.ts runs the locally built image when a Docker engine has it, else redis-server (REDIS_URL serves
# only the tests that need not own their Redis, so it does not stand in for either).
has_redis() {
  [[ -n "${REDIS_SERVER:-}" ]] || command -v redis-server >/dev/null ||
    [[ -x "$CACHE_DIR/redis-server/redis-server" ]] ||
    { command -v docker >/dev/null && docker image inspect redis:7-bookworm >/dev/null 2>&1; }
}
has_chromium() { [[ -x "$CHROMIUM" ]]; }

# Root on Debian: the packages CI installs (.ci/run), in one apt-get run.
if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
  need=()
  has_promtool || need+=(prometheus)
  has_redis || need+=(redis-server)
  has_chromium || [[ -n "${CHROMIUM_PATH:-}" ]] || need+=(chromium)
  if ((${#need[@]})); then
    echo "obtain-tools: apt-get install -y ${need[*]} (what npm test drives besides Node)" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends "${need[@]}" >&2 || echo "obtain-tools: apt-get install failed" >&2
  fi
fi

if ! has_promtool; then
  dir="$CACHE_DIR/promtool-$PROMTOOL_VERSION"
  if command -v go >/dev/null; then
    echo "obtain-tools: building promtool $PROMTOOL_VERSION into $dir (once; several minutes)" >&2
    mkdir -p "$dir"
    GOBIN="$dir" GOFLAGS=-mod=mod go install "github.com/prometheus/prometheus/cmd/promtool@$PROMTOOL_VERSION" >&2 ||
      missing+=("promtool: go install failed (or, as root: apt-get install prometheus)")
  else
    missing+=("promtool: install Go (it is built from the Go module proxy), or as root: apt-get install prometheus")
  fi
fi

if ! has_redis; then
  dir="$CACHE_DIR/redis-server"
  if command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null; then
    echo "obtain-tools: unpacking Debian's redis-server into $dir (once)" >&2
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    # redis-tools holds the server binary (redis-server is its redis-check-rdb under another name).
    if (cd "$work" && apt-get download redis-tools libjemalloc2 liblzf1 >&2); then
      rm -rf "$dir" && mkdir -p "$dir"
      for deb in "$work"/*.deb; do dpkg-deb -x "$deb" "$dir/root"; done
      ln -s redis-check-rdb "$dir/root/usr/bin/redis-server"
      lib="$(dirname "$(find "$dir/root" -name 'libjemalloc.so.2' | head -1)")"
      # exec keeps the pid, so the tests' SIGKILL/SIGSTOP reach the server itself.
      printf '#!/bin/sh\nLD_LIBRARY_PATH="%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "%s" "$@"\n' \
        "$lib" "$dir/root/usr/bin/redis-server" >"$dir/redis-server"
      chmod +x "$dir/redis-server"
    else
      missing+=("redis-server: apt-get download failed (its package lists may be empty: as root, apt-get update; or apt-get install redis-server)")
    fi
  else
    missing+=("redis-server: as root, apt-get install redis-server; or set REDIS_SERVER to its path")
  fi
fi

has_chromium || missing+=("chromium at $CHROMIUM for the dashboard tests: as root, apt-get install chromium; or set CHROMIUM_PATH")

if ((${#missing[@]})); then
  printf 'obtain-tools: npm test needs, and could not obtain:\n' >&2
  printf '  - %s\n' "${missing[@]}" >&2
  exit 1
fi
