#!/usr/bin/env bash
# Deploy checks (issue 8): npm run check:deploy. The offline tier, needing no Docker engine or cluster:
# dockerfile-utils, Debian's docker-compose, a helm built from the Go module proxy, kubernetes-models
# schemas (jest), and a replay of the image's runtime stage as a non-root user on a read-only tree.
# Running it all for real is npm run check:deploy:live (test/deploy/live/check-live.sh, issue 13).
# Each section reports; the script fails if any did.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

HELM_VERSION=v3.22.0 # keep in step with test/deploy/helm.ts
CACHE_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/context-guardian"
HELM="$CACHE_DIR/helm-$HELM_VERSION/helm"
RUNTIME_UID=10001
FAILED=()

section() { printf '\n== %s (at %ds)\n' "$1" "$SECONDS"; }
fail() { printf 'FAIL: %s\n' "$1" >&2; FAILED+=("$1"); }

# ---- tools ----
section "tools"
if [[ ! -x "$HELM" ]]; then
  echo "building helm $HELM_VERSION into $CACHE_DIR (once; later runs reuse it)"
  mkdir -p "$CACHE_DIR/helm-$HELM_VERSION"
  if ! GOBIN="$CACHE_DIR/helm-$HELM_VERSION" go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"; then
    fail "could not build helm $HELM_VERSION with $(go version 2>&1)"
  fi
fi
[[ -x "$HELM" ]] && "$HELM" version --short
if ! command -v docker-compose >/dev/null 2>&1; then
  if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Debian's docker-compose"
    apt-get install -y --no-install-recommends docker-compose >/dev/null 2>&1 \
      || { apt-get update >/dev/null 2>&1 && apt-get install -y --no-install-recommends docker-compose >/dev/null 2>&1; } \
      || true
  fi
fi
command -v docker-compose >/dev/null 2>&1 && docker-compose version --short || fail "docker-compose is not installed (apt-get install docker-compose)"

# ---- Dockerfile ----
section "Dockerfile: dockerfile-utils lint"
if npx --no-install dockerfile-utils lint Dockerfile; then echo "ok"; else fail "dockerfile-utils lint Dockerfile"; fi

# ---- compose ----
section "compose: docker-compose config -q"
for f in deploy/grafana/context-guardian.json deploy/prometheus/prometheus.yml; do
  [[ -f "$f" ]] || fail "$f is missing (docker-compose.yml mounts it in the observability profile)"
done
if command -v docker-compose >/dev/null 2>&1; then
  # A copy with .env from .env.example: env_file needs .env, and the user's own .env must not decide.
  COMPOSE_DIR="$(mktemp -d)"
  cp -r docker-compose.yml Dockerfile .dockerignore deploy "$COMPOSE_DIR/"
  cp .env.example "$COMPOSE_DIR/.env"
  check_compose() {
    local label="$1"; shift
    if (cd "$COMPOSE_DIR" && docker-compose "$@" config -q); then echo "ok: $label"; else fail "docker-compose config: $label"; fi
  }
  # .env.example's own COMPOSE_FILE (vLLM on GPUs), then every other variant docs/deploy.md names.
  check_compose "default .env (COMPOSE_FILE: base + gpu.yml)"
  check_compose "base alone" -f docker-compose.yml
  check_compose "profile observability" -f docker-compose.yml -f deploy/compose/gpu.yml --profile observability
  check_compose "profile dashboards" -f docker-compose.yml -f deploy/compose/gpu.yml --profile dashboards
  check_compose "gpu + anchor" -f docker-compose.yml -f deploy/compose/gpu.yml -f deploy/compose/anchor.yml
  check_compose "cpu override" -f docker-compose.yml -f deploy/compose/cpu.yml
  check_compose "cpu + anchor + dashboards" -f docker-compose.yml -f deploy/compose/cpu.yml \
    -f deploy/compose/anchor.yml --profile dashboards
  check_compose "gpu + litellm-front" -f docker-compose.yml -f deploy/compose/gpu.yml -f deploy/compose/litellm-front.yml
  check_compose "gpu + litellm-behind" -f docker-compose.yml -f deploy/compose/gpu.yml \
    -f deploy/compose/litellm-behind.yml
  check_compose "cpu + litellm-front" -f docker-compose.yml -f deploy/compose/cpu.yml -f deploy/compose/litellm-front.yml
  check_compose "gpu + team" -f docker-compose.yml -f deploy/compose/gpu.yml -f deploy/compose/team.yml
  rm -rf "$COMPOSE_DIR"
fi

# ---- helm ----
section "helm lint --strict, per option set"
if [[ -x "$HELM" ]]; then
  for values in test/deploy/values/*.yaml deploy/kubernetes/*-values.yaml; do
    if out="$("$HELM" lint --strict helm/context-guardian -f "$values" 2>&1)"; then
      echo "ok: $values"
    else
      printf '%s\n' "$out"; fail "helm lint --strict -f $values"
    fi
  done
fi

section "jest: rendered objects against the Kubernetes schemas, compose, Dockerfile"
if [[ -x "$HELM" ]]; then
  HELM="$HELM" npx --no-install jest -c test/deploy/jest.config.js || fail "jest -c test/deploy/jest.config.js"
else
  fail "jest deploy specs not run: no helm binary"
fi

# ---- runtime replay ----
section "runtime replay: production deps, read-only tree, uid $RUNTIME_UID, only the data dir writable"
replay() {
  local main=dist/apps/guardian/src/main.js recall=bin/context-guardian-recall.js
  if [[ "${CG_DEPLOY_SKIP_BUILD:-0}" != 1 ]]; then
    npm run --silent build || { fail "npm run build failed: the runtime stage has nothing to run"; return; }
  fi
  [[ -f "$main" ]] || { fail "$main is missing after the build: the sidecar entry point has not landed yet"; return; }
  [[ -f "$recall" ]] || { fail "$recall is missing: the recall CLI has not landed yet"; return; }

  local work app data port pid status marker
  work="$(mktemp -d)"; chmod 0755 "$work"
  app="$work/app"; data="$work/data"
  mkdir -p "$app" "$data" "$work/tmp" "$work/bin"
  cp -r dist bin package.json package-lock.json .npmrc "$app/"
  # Production dependencies only, as the image's runtime stage has them.
  (cd "$app" && npm ci --omit=dev --prefer-offline --no-audit --no-fund --loglevel=error) \
    || { fail "npm ci --omit=dev in the replay copy"; rm -rf "$work"; return; }
  for f in "$app"/bin/*.js; do ln -s "$f" "$work/bin/$(basename "$f" .js)"; done
  chmod 0755 "$app"/bin/*.js
  # The tree is root's and read-only; only the data dir and a private tmp belong to the runtime user.
  chown -R root:root "$app"; chmod -R a-w "$app"
  chown "$RUNTIME_UID:$RUNTIME_UID" "$data" "$work/tmp"; chmod 0700 "$data" "$work/tmp"
  marker="$work/marker"; touch "$marker"

  port="$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")"
  as_runtime_user() {
    setpriv --reuid="$RUNTIME_UID" --regid="$RUNTIME_UID" --clear-groups -- \
      env -i PATH="$work/bin:$(dirname "$(command -v node)"):/usr/bin:/bin" HOME="$work/tmp" TMPDIR="$work/tmp" \
      NODE_ENV=production GUARDIAN_HOST=127.0.0.1 GUARDIAN_PORT="$port" GUARDIAN_DATA_DIR="$data" \
      GUARDIAN_UPSTREAM_URL=http://127.0.0.1:9/v1 "$@"
  }
  as_runtime_user node "$app/$main" >"$work/sidecar.log" 2>&1 &
  pid=$!

  status="$(node -e "
    const http = require('http');
    const deadline = Date.now() + 30000;
    const ask = () => http.get({ host: '127.0.0.1', port: $port, path: '/readyz', timeout: 2000 }, (r) => {
      let body = ''; r.on('data', (c) => (body += c));
      r.on('end', () => { console.log(r.statusCode + ' ' + body); process.exit(0); });
    }).on('error', retry).on('timeout', retry);
    function retry() { if (Date.now() > deadline) { console.log('no answer'); process.exit(0); } setTimeout(ask, 300); }
    ask();")"
  echo "/readyz: $status"
  [[ "$status" == 200* ]] || fail "/readyz did not answer 200 as uid $RUNTIME_UID on a read-only tree (got: $status)"
  for path in /healthz /metrics; do
    code="$(node -e "require('http').get('http://127.0.0.1:$port$path',r=>{console.log(r.statusCode);process.exit(0)}).on('error',()=>{console.log('error');process.exit(0)})")"
    echo "$path: $code"; [[ "$code" == 200 ]] || fail "$path answered $code"
  done

  as_runtime_user context-guardian-recall --verify --all >"$work/recall.log" 2>&1
  local rc=$?
  echo "context-guardian-recall --verify --all: exit $rc"
  [[ $rc == 0 || $rc == 2 ]] || { cat "$work/recall.log"; fail "context-guardian-recall --verify --all exited $rc as uid $RUNTIME_UID"; }

  kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  if kill -0 "$pid" 2>/dev/null; then fail "the sidecar did not stop on SIGTERM"; kill -9 "$pid"; fi
  # Nothing outside the data dir and the private tmp may have been written by the runtime user.
  local stray
  stray="$(find / -xdev \( -path /proc -o -path "$data" -o -path "$work/tmp" \) -prune -o -uid "$RUNTIME_UID" -newer "$marker" -print 2>/dev/null | head -5)"
  [[ -z "$stray" ]] || fail "uid $RUNTIME_UID wrote outside the data dir: $stray"
  if [[ ${#FAILED[@]} -gt 0 ]]; then echo "--- sidecar log (tail)"; tail -20 "$work/sidecar.log"; fi
  rm -rf "$work"
}
replay

section "summary"
if [[ ${#FAILED[@]} -gt 0 ]]; then
  printf 'deploy checks failed (%d):\n' "${#FAILED[@]}"; printf '  - %s\n' "${FAILED[@]}"
  exit 1
fi
echo "deploy checks passed"
