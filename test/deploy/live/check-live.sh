#!/usr/bin/env bash
# npm run check:deploy:live (issue 13): the image, docker compose and a Kubernetes install, run for real
# on this machine and checked as a user would see them. Starts dockerd when none answers, builds what no
# registry can give (base images, stand-ins, Go tools: once, then cached), tears down everything it
# started, prints each check, and exits non-zero when any failed. docs/deploy.md is written from its run.
#   CG_LIVE_ONLY="image compose kube"   run only some sections (default: all three)
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=test/deploy/live/lib.sh
source "$HERE/lib.sh"
source "$HERE/engine.sh"
source "$HERE/tools.sh"
source "$HERE/standins.sh"
source "$HERE/image.sh"
source "$HERE/compose.sh"
source "$HERE/kube.sh"
cd "$CG_ROOT" || exit 1

CG_RUN_ID="cglive$$"
CG_LOGS="$(mktemp -d)"
CG_FIGURES=()
ONLY="${CG_LIVE_ONLY:-image compose kube}"
STARTED_DOCKERD=""

finish() {
  local rc=$?
  cleanup_now
  [[ -n "$STARTED_DOCKERD" ]] && stop_engine "$STARTED_DOCKERD"
  # The logs of every build and component stay when something failed, for whoever reads the failure.
  if ((rc == 0)); then rm -rf "$CG_LOGS"; else echo "logs kept in $CG_LOGS" >&2; fi
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT TERM

section "engine and base images"
started="$(start_engine)" || exit 1
[[ "$started" == started* ]] && STARTED_DOCKERD="${started#started }" && echo "$started dockerd (stopped at the end)"
docker version -f 'engine {{.Server.Version}}, client {{.Client.Version}}'
t0=$(now_ms)
base_images || exit 1
CG_FIGURES+=("base images: $(secs_since "$t0") s")

section "tools (built once into $CG_CACHE)"
t0=$(now_ms)
build_docker_plugins && install_docker_plugins && build_helm && build_etcd && build_kube && build_kwok \
  || die "building the tools failed"
CG_FIGURES+=("tools: $(secs_since "$t0") s")
docker compose version
docker buildx version

if [[ " $ONLY " == *" image "* || " $ONLY " == *" compose "* ]]; then
  build_image
  build_standins
fi
if [[ " $ONLY " == *" image "* ]]; then
  check_image_run
  check_bind_mount
fi
if [[ " $ONLY " == *" compose "* ]]; then
  check_compose_vllm
  check_compose_stop
  check_compose_cpu "docker compose"
  if command -v docker-compose >/dev/null; then check_compose_cpu docker-compose; fi
fi
if [[ " $ONLY " == *" kube "* ]]; then
  check_kube
fi

section "figures"
printf '  %s\n' "${CG_FIGURES[@]}" "total: ${SECONDS} s"
summary
