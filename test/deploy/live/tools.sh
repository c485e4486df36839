#!/usr/bin/env bash
# The live checks' tools, built once per machine from the Go module proxy into the user's cache (no
# download site is reachable here): docker compose v2 and buildx, etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kubectl and kwok. Sourced by check-live.sh; `bash tools.sh` builds them all.
# A clean machine spends most of the live check's cold time here (docs/deploy.md has the figures).
# shellcheck source=test/deploy/live/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

COMPOSE_VERSION=v2.40.3
BUILDX_VERSION=v0.29.1 # the version compose v2.40.3 embeds
KUBE_VERSION=v1.36.3
ETCD_VERSION=v3.6.16
KWOK_VERSION=v0.8.0
HELM_VERSION=v3.22.0 # keep in step with test/deploy/check-deploy.sh and test/deploy/helm.ts

PLUGINS_DIR="$CG_CACHE/docker-plugins-$COMPOSE_VERSION-$BUILDX_VERSION"
KUBE_DIR="$CG_CACHE/kube-$KUBE_VERSION"
ETCD_BIN="$CG_CACHE/etcd-$ETCD_VERSION/etcd"
KWOK_BIN="$CG_CACHE/kwok-$KWOK_VERSION/kwok"
KWOK_STAGES="$CG_CACHE/kwok-$KWOK_VERSION/stages.yaml"
HELM="$CG_CACHE/helm-$HELM_VERSION/helm"

# go_build_in_module DIR GOMOD_TEXT OUT LDFLAGS PACKAGE@VERSION...: builds the packages inside a module of
# their own (OUT: a folder ending in / or, for one package, the binary's path). Kubernetes and etcd cannot
# be `go install`ed: their go.mod files carry replace directives to folders that are not in the published
# module, so the wrapper module replaces each with its published version instead.
go_build_in_module() {
  local dir="$1" gomod="$2" out="$3" ldflags="$4"; shift 4
  rm -rf "$dir"; mkdir -p "$dir"
  printf '%s\n' "$gomod" >"$dir/go.mod"
  # go get lists every module it downloads: keep that in a log, shown only when it fails.
  (cd "$dir" && { GOFLAGS=-mod=mod go get "$@" >"$dir/go-get.log" 2>&1 || { cat "$dir/go-get.log" >&2; exit 1; }; } \
    && go build -trimpath -ldflags "$ldflags" -o "$out" "${@%@*}")
}

# go_mod_file MODULE@VERSION: the path of that module's go.mod in the module cache (downloaded if need be).
go_mod_file() {
  local dir; dir="$(mktemp -d)"
  (cd "$dir" && GOFLAGS=-mod=mod go mod download -json "$1") \
    | node -e 'let s="";process.stdin.on("data",(c)=>(s+=c)).on("end",()=>console.log(JSON.parse(s).GoMod))'
  rm -rf "$dir"
}

# docker compose v2 and docker buildx, the CLI plugins a Docker install normally brings: compose runs the
# stacks, buildx makes `docker build` use BuildKit (as Docker Desktop and docker-ce do) instead of the
# deprecated builder of a bare CLI. One module for both: compose embeds buildx, so they share the build.
build_docker_plugins() {
  [[ -x "$PLUGINS_DIR/docker-compose" && -x "$PLUGINS_DIR/docker-buildx" ]] && return 0
  echo "building docker compose $COMPOSE_VERSION and docker buildx $BUILDX_VERSION (once)"
  # compose's go.mod excludes two versions that its dependencies would otherwise pick; the wrapper module
  # carries the same exclude block (go install refuses a module with exclude directives).
  local mod excludes
  mod="$(go_mod_file "github.com/docker/compose/v2@$COMPOSE_VERSION")"
  excludes="$(sed -n '/^exclude (/,/^)/p' "$mod")"
  go_build_in_module "$PLUGINS_DIR/src" "module context-guardian.local/docker-plugins

go 1.26.0

require (
	github.com/docker/compose/v2 $COMPOSE_VERSION
	github.com/docker/buildx $BUILDX_VERSION
)

$excludes" "$PLUGINS_DIR/" \
    "-s -w -X github.com/docker/compose/v2/internal.Version=$COMPOSE_VERSION -X github.com/docker/buildx/version.Version=$BUILDX_VERSION" \
    "github.com/docker/compose/v2/cmd@$COMPOSE_VERSION" "github.com/docker/buildx/cmd/buildx@$BUILDX_VERSION"
  mv "$PLUGINS_DIR/cmd" "$PLUGINS_DIR/docker-compose"
  mv "$PLUGINS_DIR/buildx" "$PLUGINS_DIR/docker-buildx"
}

# The docker CLI finds its plugins in ~/.docker/cli-plugins, where Docker's manual install puts them.
install_docker_plugins() {
  local plugins="${DOCKER_CONFIG:-$HOME/.docker}/cli-plugins" p
  mkdir -p "$plugins"
  for p in docker-compose docker-buildx; do ln -sfn "$PLUGINS_DIR/$p" "$plugins/$p"; done
}

build_kube() {
  [[ -x "$KUBE_DIR/kube-apiserver" && -x "$KUBE_DIR/kube-controller-manager" && -x "$KUBE_DIR/kube-scheduler" \
    && -x "$KUBE_DIR/kubectl" ]] && return 0
  echo "building kube-apiserver, kube-controller-manager, kube-scheduler, kubectl $KUBE_VERSION (once)"
  local minor="${KUBE_VERSION#v1.}"; minor="${minor%%.*}"
  local mod staging gomod
  mod="$(go_mod_file "k8s.io/kubernetes@$KUBE_VERSION")"
  # Every staging module (k8s.io/api => ./staging/src/k8s.io/api) is published as v0.<minor>.<patch>.
  staging="$(sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\t\1 => \1 v0'"${KUBE_VERSION#v1}"'#p' "$mod")"
  gomod="module context-guardian.local/kube-tools

go 1.26.0

require k8s.io/kubernetes $KUBE_VERSION

replace (
$staging
)"
  # Without the version stamped in, the API server reports v0.0.0 and the chart's kubeVersion check fails.
  local v=k8s.io/component-base/version c=k8s.io/client-go/pkg/version ldflags
  ldflags="-s -w -X $v.gitVersion=$KUBE_VERSION -X $v.gitMajor=1 -X $v.gitMinor=$minor -X $v.gitTreeState=clean"
  ldflags+=" -X $c.gitVersion=$KUBE_VERSION -X $c.gitMajor=1 -X $c.gitMinor=$minor"
  go_build_in_module "$KUBE_DIR/src" "$gomod" "$KUBE_DIR/" "$ldflags" \
    "k8s.io/kubernetes/cmd/kube-apiserver@$KUBE_VERSION" "k8s.io/kubernetes/cmd/kube-controller-manager@$KUBE_VERSION" \
    "k8s.io/kubernetes/cmd/kube-scheduler@$KUBE_VERSION" "k8s.io/kubernetes/cmd/kubectl@$KUBE_VERSION"
}

build_etcd() {
  [[ -x "$ETCD_BIN" ]] && return 0
  echo "building etcd $ETCD_VERSION (once)"
  local m gomod="module context-guardian.local/etcd-tools

go 1.26.0

require go.etcd.io/etcd/server/v3 $ETCD_VERSION

replace ("
  for m in api/v3 client/pkg/v3 client/v3 pkg/v3; do gomod+=$'\n'"	go.etcd.io/etcd/$m => go.etcd.io/etcd/$m $ETCD_VERSION"; done
  gomod+=$'\n'")"
  go_build_in_module "$(dirname "$ETCD_BIN")/src" "$gomod" "$ETCD_BIN" "-s -w" "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
}

# kwok and its "fast" stages (kwok's own kustomize/stage files, shipped in its module): nodes ready at
# once, pods running and ready, claims provisioned by a default StorageClass "kwok-volume", deletions done.
build_kwok() {
  [[ -x "$KWOK_BIN" && -f "$KWOK_STAGES" ]] && return 0
  echo "building kwok $KWOK_VERSION (once)"
  GOBIN="$(dirname "$KWOK_BIN")" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
  local dir f
  dir="$(go env GOMODCACHE)/sigs.k8s.io/kwok@$KWOK_VERSION/kustomize/stage"
  : >"$KWOK_STAGES.tmp"
  for f in node/fast/node-initialize pod/fast/pod-ready pod/fast/pod-complete pod/fast/pod-delete \
    volume/fast/pvc-provision volume/fast/pv-bind volume/fast/pv-delete volume/fast/pvc-delete; do
    { echo "---"; cat "$dir/$f.yaml"; } >>"$KWOK_STAGES.tmp"
  done
  cp "$dir/volume/fast/storage-class.yaml" "$(dirname "$KWOK_BIN")/storage-class.yaml"
  mv "$KWOK_STAGES.tmp" "$KWOK_STAGES"
}

build_helm() {
  [[ -x "$HELM" ]] && return 0
  echo "building helm $HELM_VERSION (once)"
  GOBIN="$(dirname "$HELM")" go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  set -euo pipefail
  t0=$SECONDS
  build_docker_plugins; install_docker_plugins; build_helm; build_etcd; build_kube; build_kwok
  echo "tools ready in $((SECONDS - t0)) s"
fi
