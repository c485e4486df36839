# The image, run as docs/deploy.md runs it (sourced by check-live.sh). Needs: an engine, the base images,
# the stand-in images (standins.sh), and $CG_RUN_ID for unique names.

IMAGE=context-guardian
VLLM_STANDIN=context-guardian-standin/vllm:stub

build_image() {
  section "image: docker build -t $IMAGE ."
  local t0; t0=$(now_ms)
  if (cd "$CG_ROOT" && docker build --progress=plain -t "$IMAGE" . >"$CG_LOGS/image-build.log" 2>&1); then
    local mb; mb=$(($(docker image inspect -f '{{.Size}}' "$IMAGE") / 1000000))
    ok "built in $(secs_since "$t0") s, $mb MB"
    CG_FIGURES+=("image build: $(secs_since "$t0") s, $mb MB")
  else
    tail -30 "$CG_LOGS/image-build.log" >&2
    die "docker build failed (log: $CG_LOGS/image-build.log)"
  fi
  # What the image carries: the sidecar, the CLIs and the MCP server, not the benchmarks, the demo, the
  # stub or the full OpenTelemetry Node SDK (defect 5).
  local left
  left="$(docker run --rm "$IMAGE" sh -c 'for p in dist/bench dist/apps/demo dist/libs/stub-backend node_modules/@opentelemetry/sdk-node node_modules/@grpc/grpc-js; do [ -e "/app/$p" ] && echo "$p"; done; true')"
  check "the image leaves out the benchmarks, the demo, the stub and the OTel Node SDK${left:+ (found: $left)}" test -z "$left"
  local nm; nm="$(docker run --rm "$IMAGE" du -sm /app/node_modules | cut -f1)"
  check "production node_modules is $nm MB (at most 120; 275 with the OTel Node SDK)" test "$nm" -le 120
}

# guardian_ready PORT: /readyz answers 200.
guardian_ready() { http_ok "http://127.0.0.1:$1/readyz"; }
container_health() { docker inspect -f '{{.State.Health.Status}}' "$1" 2>/dev/null; }
container_healthy() { [[ "$(container_health "$1")" == healthy ]]; }

check_image_run() {
  section "image: run as documented (read-only, uid 10001, a compacting session, recall, SIGTERM)"
  local net="$CG_RUN_ID-net" data="$CG_RUN_ID-data" anchor="$CG_RUN_ID-anchor"
  local up="$CG_RUN_ID-vllm" g="$CG_RUN_ID-guardian" port t0 out
  port="$(free_port)"
  on_exit "docker rm -fv $up $g; docker network rm $net; docker volume rm $data $anchor"
  docker network create "$net" >/dev/null
  # The upstream: the vLLM stand-in, with vLLM's own flags, on a network guardian shares.
  docker run -d --name "$up" --network "$net" --network-alias vllm "$VLLM_STANDIN" \
    --model cg-live --max-model-len 4096 --host 0.0.0.0 --port 8000 >/dev/null
  t0=$(now_ms)
  docker run -d --name "$g" --network "$net" --read-only --tmpfs /tmp \
    -v "$data:/data" -v "$anchor:/anchor" -e GUARDIAN_SEAL_ANCHOR_DIR=/anchor \
    -e GUARDIAN_UPSTREAM_URL=http://vllm:8000/v1 -p "127.0.0.1:$port:8786" "$IMAGE" >/dev/null
  if wait_until 30 guardian_ready "$port"; then
    ok "/readyz answered 200 after $(secs_since "$t0") s"
    CG_FIGURES+=("container ready: $(secs_since "$t0") s")
  else
    docker logs "$g" 2>&1 | tail -20 >&2; fail "/readyz did not answer within 30 s"; return
  fi
  out="$(http_get "http://127.0.0.1:$port/readyz")"
  check "/readyz reports the span volume writable: ${out#200 }" grep -q '"span_volume":"writable"' <<<"$out"
  check "the sidecar runs as uid 10001" test "$(docker exec "$g" id -u)" = 10001
  check "its root filesystem is read-only" bash -c "! docker exec $g touch /app/probe 2>/dev/null"
  if wait_until 20 container_healthy "$g"; then
    ok "the HEALTHCHECK says healthy $(secs_since "$t0") s after the start (defect 4)"
  else
    fail "not healthy within 20 s: $(container_health "$g")"
  fi

  if out="$(node "$CG_ROOT/test/deploy/live/session.mjs" "http://127.0.0.1:$port" cg-live 10)"; then
    ok "a 10-turn session through the container: $out"
  else
    fail "the session through the container failed: $out"
  fi
  check "guardian compacted it (compactions: $(json_field "$out" .compactions))" \
    test "$(json_field "$out" .compactions)" -ge 1
  check "the window was detected from the vLLM stand-in ($(json_field "$out" .window_source))" \
    test "$(json_field "$out" .window_source)" = detected:vllm

  # The CLI in a second container on the same volumes, as the Dockerfile header documents (defect 3: the
  # anchor volume must be writable by uid 10001 for "anchored").
  out="$(docker run --rm -v "$data:/data" -v "$anchor:/anchor" -e GUARDIAN_SEAL_ANCHOR_DIR=/anchor "$IMAGE" \
    context-guardian-recall --verify --all 2>&1)"
  local rc=$?
  check "context-guardian-recall --verify --all exits 0 in a second container" test "$rc" = 0
  check "and every run verifies anchored: $(tr '\n' ' ' <<<"$out")" all_anchored "$out"

  t0=$(now_ms)
  docker stop -t 10 "$g" >/dev/null
  local took; took="$(secs_since "$t0")"
  check "SIGTERM: stopped in $took s with exit code $(docker inspect -f '{{.State.ExitCode}}' "$g")" \
    test "$(docker inspect -f '{{.State.ExitCode}}' "$g")" = 0
  CG_FIGURES+=("docker stop: $took s")
  cleanup_now
}

# A bind-mounted data dir that root owns cannot be written by uid 10001: /readyz must say so (the
# operator's only hint short of a failed compaction), and the documented chown must cure it.
check_bind_mount() {
  section "image: a root-owned bind-mounted data dir"
  local dir g="$CG_RUN_ID-bind" port out
  dir="$(mktemp -d)"; chmod 0755 "$dir"; port="$(free_port)"
  on_exit "docker rm -fv $g; rm -rf $dir"
  docker run -d --name "$g" --read-only --tmpfs /tmp -v "$dir:/data" -p "127.0.0.1:$port:8786" "$IMAGE" >/dev/null
  wait_until 30 guardian_ready "$port"
  out="$(http_get "http://127.0.0.1:$port/readyz")"
  check "root-owned: /readyz reports span_volume read-only" grep -q '"span_volume":"read-only"' <<<"$out"
  docker rm -fv "$g" >/dev/null
  chown 10001:10001 "$dir"
  docker run -d --name "$g" --read-only --tmpfs /tmp -v "$dir:/data" -p "127.0.0.1:$port:8786" "$IMAGE" >/dev/null
  wait_until 30 guardian_ready "$port"
  out="$(http_get "http://127.0.0.1:$port/readyz")"
  check "after chown 10001:10001 the same dir is writable" grep -q '"span_volume":"writable"' <<<"$out"
  cleanup_now
}
