#!/usr/bin/env bash
# What `npm test` needs besides Node, obtained when the machine lacks it, so that the README's `npm test` passes on a
# fresh Debian 12 clone (issue 30 item 9) and no test skips. Run by `npm test` before jest; test/support/tools.ts
# finds what it put in the user cache. A tool already on PATH (or named by its variable) is used as it is.
#   as root with apt-get   apt-get install -y what is missing: prometheus (promtool), redis-server, chromium
#   otherwise              promtool built once from the Go module proxy with the machine's Go; redis-server unpacked
#                          from Debian's packages (apt-get download, no root); chromium cannot be had without root
#   Go 1.26 or later       the tlog checker (test/archive/go-checker.ts) and promtool are built with it. When PATH has
#                          none that new (Debian 12's golang-go is 1.19), the toolchain Go publishes on its module proxy
#                          (module golang.org/toolchain) is fetched with whatever go there is, else with Debian's
#                          golang-go unpacked from its package (apt-get download, no root), and kept in the cache.
# Anything still missing is listed with how to get it, and the run stops before jest.
set -euo pipefail

PROMTOOL_VERSION=v0.316.0 # Prometheus 3.x's Go module version; keep in step with test/support/tools.ts
GO_VERSION=1.26.8         # the toolchain fetched when PATH's Go is missing or older than 1.26 (tlog-check's go.mod);
GO_MINOR=26               # keep both in step with test/support/tools.ts
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

# The Go that npm test builds with: GO when set, else go on PATH when it is 1.26 or later, else the cached toolchain.
GO_CACHED="$CACHE_DIR/go-$GO_VERSION/bin/go"
go_minor() { # the minor version a go command reports of itself (its own, not one it would switch to), or 0
  (cd / && GOTOOLCHAIN=local "$1" env GOVERSION 2>/dev/null) | sed -n 's/^go1\.\([0-9]*\).*/\1/p' | grep . || echo 0
}
find_go() {
  if [[ -n "${GO:-}" ]]; then echo "$GO"; return; fi
  if command -v go >/dev/null && (($(go_minor go) >= GO_MINOR)); then command -v go; return; fi
  if [[ -x "$GO_CACHED" ]]; then echo "$GO_CACHED"; fi
}

# Fetches golang.org/toolchain@v0.0.1-go$GO_VERSION.<os>-<arch> through the Go module proxy (GOPROXY, checked against
# the checksum database as any module is) with the go command `$1`, into the cache.
fetch_go() {
  local boot="$1" os arch work
  os="$(uname -s | tr '[:upper:]' '[:lower:]')"
  case "$(uname -m)" in x86_64 | amd64) arch=amd64 ;; aarch64 | arm64) arch=arm64 ;; *) arch="$(uname -m)" ;; esac
  work="$(mktemp -d "$CACHE_DIR/go-fetch.XXXXXX")"
  local module="golang.org/toolchain@v0.0.1-go$GO_VERSION.$os-$arch"
  if (cd / && GOTOOLCHAIN=local GOFLAGS=-modcacherw GOMODCACHE="$work/mod" GOPATH="$work/path" \
    "$boot" mod download "$module" >&2); then
    local dir="$work/mod/$module"
    chmod -R u+w "$dir"
    # A module zip keeps no executable bits; the go command sets these when it switches toolchains itself.
    chmod +x "$dir"/bin/* "$dir"/pkg/tool/*/*
    rm -rf "$CACHE_DIR/go-$GO_VERSION" && mv "$dir" "$CACHE_DIR/go-$GO_VERSION"
  fi
  chmod -R u+w "$work" && rm -rf "$work"
  [[ -x "$GO_CACHED" ]] && "$GO_CACHED" version >&2
}

# A go command to fetch the toolchain with: any go on PATH, else Debian's golang-go unpacked into `$1` (no root).
bootstrap_go() {
  if command -v go >/dev/null; then command -v go; return; fi
  command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || return 0
  local pkg
  debian_go() { apt-cache depends golang-go 2>/dev/null | sed -n 's/^ *Depends: \(golang-[0-9.]*-go\)$/\1/p' | head -1; }
  pkg="$(debian_go)"
  # Empty package lists (a fresh container): as root, fill them once.
  if [[ -z "$pkg" && "$(id -u)" == 0 ]]; then apt-get update -qq >&2 && pkg="$(debian_go)"; fi
  [[ -n "$pkg" ]] && (cd "$1" && apt-get download "$pkg" >&2) || return 0
  dpkg-deb -x "$1"/*.deb "$1/root"
  find "$1/root" -path '*/bin/go' -type f | head -1
}

GO_BIN="$(find_go)"
if [[ -z "$GO_BIN" ]]; then
  mkdir -p "$CACHE_DIR"
  boot_dir="$(mktemp -d)"
  boot="$(bootstrap_go "$boot_dir")"
  if [[ -n "$boot" ]]; then
    echo "obtain-tools: fetching Go $GO_VERSION from the Go module proxy into $CACHE_DIR/go-$GO_VERSION (once)" >&2
    fetch_go "$boot" || true
  fi
  rm -rf "$boot_dir"
  GO_BIN="$(find_go)"
  [[ -n "$GO_BIN" ]] ||
    missing+=("go $GO_VERSION (the tlog checker needs 1.26 or later): install Go, or set GO; this script fetches it with an older go, or with Debian's golang-go (apt-get update may be needed)")
fi

if ! has_promtool; then
  dir="$CACHE_DIR/promtool-$PROMTOOL_VERSION"
  if [[ -n "$GO_BIN" ]]; then
    echo "obtain-tools: building promtool $PROMTOOL_VERSION into $dir (once; several minutes)" >&2
    mkdir -p "$dir"
    GOBIN="$dir" GOFLAGS=-mod=mod "$GO_BIN" install "github.com/prometheus/prometheus/cmd/promtool@$PROMTOOL_VERSION" >&2 ||
      missing+=("promtool: go install failed (or, as root: apt-get install prometheus)")
  else
    missing+=("promtool: needs Go (it is built from the Go module proxy), or as root: apt-get install prometheus")
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
