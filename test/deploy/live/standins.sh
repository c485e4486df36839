# Stand-ins for the images no registry can give us here (sourced by check-live.sh): vLLM and llama.cpp
# are the project's stub upstream behind their real command lines, Prometheus is Debian's. The compose
# files name them through VLLM_IMAGE, LLAMACPP_IMAGE and PROMETHEUS_IMAGE, so the files stay as users run them.

STANDIN_VLLM_IMAGE=context-guardian-standin/vllm
STANDIN_TAG=stub
STANDIN_LLAMACPP_IMAGE=context-guardian-standin/llamacpp:stub
STANDIN_PROMETHEUS_IMAGE=context-guardian-standin/prometheus:debian

build_standins() {
  section "stand-in images"
  local t0 ctx images="$CG_ROOT/test/deploy/live/images"
  t0=$(now_ms)
  # The stub as compiled from this tree, on top of the image just built.
  (cd "$CG_ROOT" && npm run --silent build) >"$CG_LOGS/npm-build.log" 2>&1 || die "npm run build failed (log: $CG_LOGS/npm-build.log)"
  ctx="$(mktemp -d)"
  # The stub and the one lib it imports (libs/errors: its coded errors); dist keeps their relative paths.
  mkdir -p "$ctx/libs"
  cp -r "$CG_ROOT/dist/libs/stub-backend" "$CG_ROOT/dist/libs/errors" "$ctx/libs/"
  cp "$images/vllm-standin.sh" "$images/llamacpp-standin.sh" "$ctx/"
  local target tag
  for target in vllm llamacpp; do
    tag="$STANDIN_VLLM_IMAGE:$STANDIN_TAG"; [[ $target == llamacpp ]] && tag="$STANDIN_LLAMACPP_IMAGE"
    docker build --progress=plain --target "$target" --build-arg GUARDIAN_IMAGE=context-guardian \
      -t "$tag" -f "$images/stub.Dockerfile" "$ctx" >>"$CG_LOGS/standins.log" 2>&1 \
      || die "building the $target stand-in failed (log: $CG_LOGS/standins.log)"
    # A stand-in that cannot load its code would only show later as a container that keeps restarting.
    docker run --rm --entrypoint node "$tag" /app/dist/libs/stub-backend/src/main.js --help >>"$CG_LOGS/standins.log" 2>&1 \
      || die "the $target stand-in cannot start its stub (log: $CG_LOGS/standins.log)"
  done
  rm -rf "$ctx"
  if ! docker image inspect "$STANDIN_PROMETHEUS_IMAGE" >/dev/null 2>&1; then
    docker build --progress=plain -t "$STANDIN_PROMETHEUS_IMAGE" -f "$images/prometheus.Dockerfile" "$images" \
      >>"$CG_LOGS/standins.log" 2>&1 || die "building the Prometheus stand-in failed (log: $CG_LOGS/standins.log)"
  fi
  ok "vLLM, llama.cpp and Prometheus stand-ins ready in $(secs_since "$t0") s"
}
