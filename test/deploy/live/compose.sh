# docker compose, run as docs/deploy.md runs it (sourced by check-live.sh): a copy of the working tree,
# `cp .env.example .env`, a few lines of .env changed as a user would, `docker compose up -d`. The
# stand-in images (standins.sh) take the place of vLLM, llama.cpp and Prometheus through .env.

# compose_project NAME: a copy of the working tree (tracked and untracked, not ignored) in a folder named
# NAME, so that compose calls the project NAME and a user's own .env and stacks are never touched.
compose_project() {
  local dir; dir="$(mktemp -d)/$1"
  mkdir -p "$dir"
  (cd "$CG_ROOT" && git ls-files -co --exclude-standard -z | tar --null -cf - -T -) | tar -xf - -C "$dir"
  cp "$dir/.env.example" "$dir/.env"
  echo "$dir"
}

# set_env DIR KEY VALUE: sets KEY in DIR/.env, uncommenting the documented line as a user would.
set_env() {
  local file="$1/.env"
  if grep -qE "^#? ?$2=" "$file"; then
    sed -i -E "0,/^#? ?$2=.*/s||$2=$3|" "$file"
  else
    printf '%s=%s\n' "$2" "$3" >>"$file"
  fi
}

# The compose of the current check: "docker compose" (v2), or Debian's "docker-compose" (v1).
CG_COMPOSE_CMD="docker compose"
dc() { (cd "$CG_COMPOSE_DIR" && $CG_COMPOSE_CMD "$@"); }
guardian_healthy() { container_healthy "$(dc ps -q guardian)"; }

# compose_up LABEL: `docker compose up -d`, then waits for guardian's HEALTHCHECK.
compose_up() {
  local t0 log="$CG_LOGS/compose-${1//[^a-z0-9-]/_}.log"; t0=$(now_ms)
  if ! dc up -d >"$log" 2>&1; then
    tail -30 "$log" >&2; fail "$1: $CG_COMPOSE_CMD up -d failed"; return 1
  fi
  if wait_until 60 guardian_healthy; then
    ok "$1: $CG_COMPOSE_CMD up -d, guardian healthy after $(secs_since "$t0") s"
    CG_FIGURES+=("compose up ($1) to healthy: $(secs_since "$t0") s")
  else
    dc logs --tail 20 >&2; fail "$1: guardian not healthy within 60 s"; return 1
  fi
}

# compose_session LABEL PORT SOURCE: a compacting session through the stack; SOURCE is the expected window_source.
compose_session() {
  local out
  if out="$(node "$CG_ROOT/test/deploy/live/session.mjs" "http://127.0.0.1:$2" cg-live 10)"; then
    ok "$1: a 10-turn session: $out"
  else
    fail "$1: the session failed: $out"; return
  fi
  check "$1: guardian compacted it ($(json_field "$out" .compactions) compactions)" test "$(json_field "$out" .compactions)" -ge 1
  check "$1: window detected from the upstream ($(json_field "$out" .window_source))" test "$(json_field "$out" .window_source)" = "$3"
}

prometheus_target_up() {
  local out; out="$(http_get "http://127.0.0.1:$1/api/v1/targets")"
  grep -q '"job":"context-guardian"' <<<"$out" && grep -q '"health":"up"' <<<"$out"
}

check_compose_vllm() {
  section "compose: vLLM stand-in, Redis, anchor volume, observability profile"
  local name="$CG_RUN_ID-vllm" port pport env out project
  CG_COMPOSE_DIR="$(compose_project "$name")"; project="$name"
  { read -r port; read -r pport; } < <(free_port 2)
  on_exit "(cd $CG_COMPOSE_DIR && docker compose down -v --remove-orphans); rm -rf $(dirname "$CG_COMPOSE_DIR")"
  set_env "$CG_COMPOSE_DIR" COMPOSE_FILE docker-compose.yml:deploy/compose/anchor.yml # no GPU here: no gpu.yml
  set_env "$CG_COMPOSE_DIR" COMPOSE_PROFILES observability
  set_env "$CG_COMPOSE_DIR" MODEL cg-live
  set_env "$CG_COMPOSE_DIR" MAX_MODEL_LEN 4096
  set_env "$CG_COMPOSE_DIR" VLLM_IMAGE "$STANDIN_VLLM_IMAGE"
  set_env "$CG_COMPOSE_DIR" VLLM_TAG "$STANDIN_TAG"
  set_env "$CG_COMPOSE_DIR" PROMETHEUS_IMAGE "$STANDIN_PROMETHEUS_IMAGE"
  set_env "$CG_COMPOSE_DIR" GUARDIAN_PUBLISH_PORT "$port"
  set_env "$CG_COMPOSE_DIR" PROMETHEUS_PUBLISH_PORT "$pport"
  set_env "$CG_COMPOSE_DIR" HF_TOKEN hf_cglive_not_a_real_token
  set_env "$CG_COMPOSE_DIR" GRAFANA_ADMIN_PASSWORD cglive-grafana-password
  set_env "$CG_COMPOSE_DIR" GUARDIAN_LOG_LEVEL debug
  compose_up vllm || { cleanup_now; return; }

  # defect 6: each service gets its own settings from .env and nothing else.
  env="$(dc exec -T guardian env)"
  check "guardian got its own setting from .env (GUARDIAN_LOG_LEVEL=debug)" grep -qx GUARDIAN_LOG_LEVEL=debug <<<"$env"
  check "guardian did not get HF_TOKEN or the Grafana password" bash -c '! grep -qE "^(HF_TOKEN|GRAFANA_ADMIN_PASSWORD)=" <<<"$1"' _ "$env"
  env="$(dc exec -T vllm env)"
  check "vllm got HF_TOKEN and nothing of guardian's, Grafana's or the stack's from .env" \
    bash -c 'grep -qx HF_TOKEN=hf_cglive_not_a_real_token <<<"$1" && ! grep -qE "^(GUARDIAN_|GRAFANA_|MODEL=|MAX_MODEL_LEN=)" <<<"$1"' _ "$env"

  out="$(http_get "http://127.0.0.1:$port/readyz")"
  check "/readyz: span volume writable, memo in Redis: ${out#200 }" \
    bash -c 'grep -q "\"span_volume\":\"writable\"" <<<"$1" && grep -q "\"memo_store\":\"redis\"" <<<"$1"' _ "$out"
  compose_session vllm "$port" detected:vllm

  local spans keys
  spans="$(docker run --rm -v "${project}_guardian-data:/data" debian:bookworm-slim find /data/spans -name '[0-9]*.json' | wc -l)"
  check "spans in the volume ${project}_guardian-data: $spans" test "$spans" -ge 1
  keys="$(dc exec -T redis redis-cli --scan --pattern 'guardian:*' | wc -l)"
  check "memo keys in Redis: $keys" test "$keys" -ge 1
  out="$(dc exec -T guardian context-guardian-recall --verify --all 2>&1)"
  check "docker compose exec guardian context-guardian-recall --verify --all: $(tr '\n' ' ' <<<"$out")" \
    all_anchored "$out"

  # Prometheus scrapes every 15 s; give it two rounds.
  if wait_until 40 prometheus_target_up "$pport"; then ok "Prometheus scrapes guardian: target up"
  else fail "Prometheus target not up within 40 s: $(http_get "http://127.0.0.1:$pport/api/v1/targets" | head -c 400)"; fi
  out="$(http_get "http://127.0.0.1:$pport/api/v1/rules")"
  local rules; rules="$(grep -o '"type":"alerting"' <<<"$out" | wc -l)"
  check "Prometheus loaded $rules alert rules from deploy/prometheus/alerts.yml" test "$rules" -ge 1

  dc down >/dev/null 2>&1
  check "docker compose down keeps the archive volume ${project}_guardian-data" docker volume inspect "${project}_guardian-data"
  cleanup_now
}

# The GPU-less path: deploy/compose/cpu.yml swaps vLLM for llama.cpp (defect 6: it needs no GPU, and
# llama.cpp gets HF_TOKEN). Run with compose v2 and, where installed, Debian's compose v1.
check_compose_cpu() {
  local compose="$1" label="cpu ($1)" name="$CG_RUN_ID-cpu${1//[^a-z0-9]/}" port env
  section "compose: the GPU-less path (llama.cpp stand-in) with $compose"
  CG_COMPOSE_DIR="$(compose_project "$name")"
  port="$(free_port)"
  on_exit "(cd $CG_COMPOSE_DIR && $compose down -v --remove-orphans); rm -rf $(dirname "$CG_COMPOSE_DIR")"
  set_env "$CG_COMPOSE_DIR" COMPOSE_FILE docker-compose.yml:deploy/compose/cpu.yml
  set_env "$CG_COMPOSE_DIR" MAX_MODEL_LEN 4096
  set_env "$CG_COMPOSE_DIR" LLAMACPP_IMAGE "$STANDIN_LLAMACPP_IMAGE"
  set_env "$CG_COMPOSE_DIR" GUARDIAN_PUBLISH_PORT "$port"
  set_env "$CG_COMPOSE_DIR" HF_TOKEN hf_cglive_not_a_real_token
  CG_COMPOSE_CMD="$compose"
  if compose_up "$label"; then
    check "$label: no vllm container, and no GPU asked for" test -z "$(dc ps -q vllm 2>/dev/null)"
    env="$(dc exec -T llamacpp env)"
    check "$label: llama.cpp got HF_TOKEN" grep -qx HF_TOKEN=hf_cglive_not_a_real_token <<<"$env"
    compose_session "$label" "$port" detected:llamacpp
  fi
  cleanup_now
  CG_COMPOSE_CMD="docker compose"
}

# stream_to FILE URL MODEL: one streamed chat answer through guardian, written to FILE as it arrives (plain Node:
# the host's, as session.mjs). Its exit code is 0 when the answer came back 200.
stream_to() {
  node -e '
    const [file, url, model] = process.argv.slice(1);
    const out = require("fs").createWriteStream(file);
    fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model, stream: true, max_tokens: 32, messages: [{ role: "user", content: "hi" }] }),
    }).then(async (res) => {
      for await (const chunk of res.body) out.write(chunk);
      out.end(() => process.exit(res.status === 200 ? 0 : 1));
    }, (err) => { out.end(String(err)); process.exit(1); });
  ' "$@"
}

# issue 30 item 1: `docker compose stop` with a 40 s stream in flight. guardian drains (5 s), closes its listener,
# lets the stream finish within its 60 s grace, and exits 0 inside compose's 65 s stop_grace_period: the answer is
# whole (ADR 0121). Before, docker's 10 s default killed it (exit 137) with the stream cut, and then the 25 s grace
# ended a 40 s stream with an error event.
check_compose_stop() {
  section "compose: docker compose stop with a 40 s stream in flight"
  local name="$CG_RUN_ID-stop" port answer="$CG_LOGS/compose-stop-answer.txt" pid rc t0 id code
  CG_COMPOSE_DIR="$(compose_project "$name")"
  port="$(free_port)"
  on_exit "(cd $CG_COMPOSE_DIR && docker compose down -v --remove-orphans); rm -rf $(dirname "$CG_COMPOSE_DIR")"
  # The vLLM stand-in spreads each streamed answer over 40 s, the issue's streams: its first event at once, its last
  # 40 s later. Stopped once the first event is in, guardian has the whole 40 s still to stream.
  printf 'services:\n  vllm:\n    environment:\n      STUB_STREAM_MS: "40000"\n' >"$CG_COMPOSE_DIR/slow-upstream.yml"
  set_env "$CG_COMPOSE_DIR" COMPOSE_FILE docker-compose.yml:slow-upstream.yml
  set_env "$CG_COMPOSE_DIR" MODEL cg-live
  set_env "$CG_COMPOSE_DIR" MAX_MODEL_LEN 4096
  set_env "$CG_COMPOSE_DIR" VLLM_IMAGE "$STANDIN_VLLM_IMAGE"
  set_env "$CG_COMPOSE_DIR" VLLM_TAG "$STANDIN_TAG"
  set_env "$CG_COMPOSE_DIR" GUARDIAN_PUBLISH_PORT "$port"
  set_env "$CG_COMPOSE_DIR" HF_TOKEN hf_cglive_not_a_real_token
  compose_up stop || { cleanup_now; return; }
  stream_to "$answer" "http://127.0.0.1:$port" cg-live & pid=$!
  # The stop comes when the answer has begun (a wait on the event; 120 s only guards against a hang).
  if ! wait_until 120 grep -q '^data: ' "$answer"; then
    fail "stop: the streamed answer did not begin: $(head -c 300 "$answer")"; kill "$pid" 2>/dev/null; cleanup_now; return
  fi
  t0=$(now_ms)
  dc stop guardian >"$CG_LOGS/compose-stop.log" 2>&1; rc=$?
  id="$(dc ps -aq guardian)"; code="$(docker inspect -f '{{.State.ExitCode}}' "$id")"
  check "stop: docker compose stop guardian exits 0 (after $(secs_since "$t0") s)" test "$rc" -eq 0
  check "stop: the guardian container exited 0, not killed (exit $code)" test "$code" -eq 0
  if wait "$pid"; then ok "stop: the stream in flight came back 200"; else fail "stop: the stream in flight failed"; fi
  check "stop: the stream is whole (data: [DONE], no error event): $(wc -c <"$answer") bytes" \
    bash -c 'grep -q "data: \[DONE\]" "$1" && ! grep -q "\"error\"" "$1"' _ "$answer"
  CG_FIGURES+=("compose stop with a 40 s stream in flight: $(secs_since "$t0") s")
  cleanup_now
}
