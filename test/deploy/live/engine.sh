#!/usr/bin/env bash
# A Docker engine and the local base images, for the live deploy checks and the Redis tests.
#   bash test/deploy/live/engine.sh up     start dockerd if none answers (prints "started <pid>"), then
#                                          build the base images that are missing (docs/adr/0102)
#   bash test/deploy/live/engine.sh down <pid>   stop the dockerd that "up" started
# No container registry is reachable here, so every image the checks run is built on this machine from
# Debian's packages and the host's own Node: see build_* below. Each is cached by its tag.
# shellcheck source=test/deploy/live/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DEBIAN_IMAGE=debian:bookworm-slim
NODE_IMAGE=node:20-bookworm-slim
REDIS_IMAGE=redis:7-bookworm
DEBIAN_MIRROR="${CG_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
IMAGES_DIR="$CG_ROOT/test/deploy/live/images"
LABEL=org.opencontainers.image.vendor=context-guardian-local-build

engine_answers() { docker info >/dev/null 2>&1; }

start_engine() {
  if engine_answers; then return 0; fi
  command -v dockerd >/dev/null || die "no Docker engine answers and dockerd is not installed (apt-get install docker.io)"
  [[ "$(id -u)" == 0 ]] || die "no Docker engine answers; starting dockerd needs root"
  mkdir -p "$CG_CACHE"
  # Debian's docker.io 20.10 on a host without systemd: started by hand, logging to the cache.
  setsid dockerd --storage-driver overlay2 >"$CG_CACHE/dockerd.log" 2>&1 </dev/null &
  local pid=$!
  if ! wait_until 60 engine_answers; then
    tail -20 "$CG_CACHE/dockerd.log" >&2
    kill "$pid" 2>/dev/null || true
    die "dockerd did not answer within 60 s (log: $CG_CACHE/dockerd.log)"
  fi
  echo "started $pid"
}

stop_engine() {
  local pid="$1"
  kill "$pid" 2>/dev/null || return 0
  # dockerd stops its containers first (up to their stop timeout), then containerd.
  wait_until 60 bash -c "! kill -0 $pid" || { echo "dockerd $pid did not stop; killing it" >&2; kill -9 "$pid"; }
}

have_image() { docker image inspect "$1" >/dev/null 2>&1; }

# debian:bookworm-slim: debootstrap's minbase, slimmed the way the official image is (no docs, man pages or
# locales; apt keeps no package lists or archives), imported as one layer.
build_debian() {
  command -v debootstrap >/dev/null || die "debootstrap is not installed (apt-get install debootstrap)"
  local rootfs
  rootfs="$(mktemp -d)"
  echo "building $DEBIAN_IMAGE with debootstrap from $DEBIAN_MIRROR"
  debootstrap --variant=minbase bookworm "$rootfs" "$DEBIAN_MIRROR" >"$rootfs.log" 2>&1 \
    || { tail -20 "$rootfs.log" >&2; rm -rf "$rootfs" "$rootfs.log"; die "debootstrap failed"; }
  cp "$IMAGES_DIR/debian/dpkg-slim" "$rootfs/etc/dpkg/dpkg.cfg.d/docker"
  cp "$IMAGES_DIR/debian/apt-slim" "$rootfs/etc/apt/apt.conf.d/docker-slim"
  rm -f "$rootfs/etc/apt/sources.list"
  # The engine provides both at run time; keep the host's own out of the image.
  : >"$rootfs/etc/resolv.conf"
  : >"$rootfs/etc/hostname"
  sed "s#@MIRROR@#$DEBIAN_MIRROR#" "$IMAGES_DIR/debian/debian.sources" >"$rootfs/etc/apt/sources.list.d/debian.sources"
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/log/*.log \
    "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/usr/share/locale/* "$rootfs"/tmp/*
  find "$rootfs/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
  tar -C "$rootfs" --numeric-owner -c . \
    | docker import --change 'CMD ["bash"]' --change "LABEL $LABEL" - "$DEBIAN_IMAGE" >/dev/null
  rm -rf "$rootfs" "$rootfs.log"
}

# node:20-bookworm-slim: the Debian image plus this machine's Node 20 and npm, as the official image lays
# them out (/usr/local), plus the host's CA bundle: the registries are reached through a TLS proxy whose
# CA only the host trusts, so npm inside a build needs it (NODE_EXTRA_CA_CERTS).
build_node() {
  local node npm_dir ctx
  node="$(command -v node)"; npm_dir="$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")"
  [[ "$("$node" --version)" == v20.* ]] || die "the host's node is $("$node" --version), not Node 20"
  ctx="$(mktemp -d)"
  cp "$node" "$ctx/node"
  cp -r "$npm_dir" "$ctx/npm"
  cp "${CG_HOST_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}" "$ctx/host-ca.crt"
  echo "building $NODE_IMAGE from $DEBIAN_IMAGE and the host's node $("$node" --version)"
  docker build -q -t "$NODE_IMAGE" --label "$LABEL" -f "$IMAGES_DIR/node.Dockerfile" "$ctx" >/dev/null
  rm -rf "$ctx"
}

# redis:7-bookworm: Debian's redis-server (7.0) behaves as the official image for compose and testcontainers.
build_redis() {
  echo "building $REDIS_IMAGE from Debian's redis-server"
  docker build -q -t "$REDIS_IMAGE" --label "$LABEL" -f "$IMAGES_DIR/redis.Dockerfile" "$IMAGES_DIR" >/dev/null
}

base_images() {
  local t0=$SECONDS
  have_image "$DEBIAN_IMAGE" || build_debian
  have_image "$NODE_IMAGE" || build_node
  have_image "$REDIS_IMAGE" || build_redis
  echo "base images ready in $((SECONDS - t0)) s: $DEBIAN_IMAGE, $NODE_IMAGE, $REDIS_IMAGE"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  set -euo pipefail
  case "${1:-}" in
    up) start_engine; base_images ;;
    down) [[ -n "${2:-}" ]] && stop_engine "$2" ;;
    *) echo "usage: engine.sh up | down <pid>" >&2; exit 2 ;;
  esac
fi
