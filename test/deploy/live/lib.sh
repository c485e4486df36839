# Helpers shared by the live deploy checks (sourced, never run). Every check reports "ok: ..." or
# "FAIL: ..."; the entry script exits non-zero when any failed.

CG_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
# Everything built once per machine (Go binaries, their sources) lives in the user's cache, never in the repo.
CG_CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/context-guardian"
CG_FAILED=()
CG_PASSED=0

section() { printf '\n== %s (at %ds)\n' "$1" "$SECONDS"; }
ok() { printf 'ok: %s\n' "$1"; CG_PASSED=$((CG_PASSED + 1)); }
fail() { printf 'FAIL: %s\n' "$1" >&2; CG_FAILED+=("$1"); }
# check LABEL CMD...: runs CMD (its output discarded, its errors shown), reports ok or FAIL under LABEL.
check() {
  local label="$1"; shift
  if "$@" >/dev/null; then ok "$label"; else fail "$label"; fi
}
die() { printf 'FATAL: %s\n' "$1" >&2; exit 1; }

# wait_until SECONDS CMD...: retries CMD every 0.25 s until it succeeds or the time is up.
wait_until() {
  local deadline=$((SECONDS + $1)); shift
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || return 1
    sleep 0.25
  done
}

# free_port [N]: N (default 1) distinct free TCP ports on loopback, from the kernel, one a line. All N are
# held open until every one is known, so that two of them are never the same port.
free_port() {
  node -e '
    const net = require("net");
    const n = Number(process.argv[1] || 1);
    const servers = Array.from({ length: n }, () => net.createServer());
    Promise.all(servers.map((s) => new Promise((r) => s.listen(0, "127.0.0.1", r)))).then(() => {
      console.log(servers.map((s) => s.address().port).join("\n"));
      servers.forEach((s) => s.close());
    });
  ' "${1:-1}"
}

# http_get URL [HEADER...]: prints "<status> <body>" (no curl in every image or host; node is everywhere here).
http_get() {
  node -e '
    const [url, ...headers] = process.argv.slice(1);
    const h = Object.fromEntries(headers.map((x) => [x.slice(0, x.indexOf(":")), x.slice(x.indexOf(":") + 1).trim()]));
    fetch(url, { headers: h, signal: AbortSignal.timeout(10000) })
      .then(async (r) => { process.stdout.write(`${r.status} ${await r.text()}`); })
      .catch((e) => { process.stdout.write(`error ${e.cause?.code ?? e.message}`); process.exitCode = 1; });
  ' "$@"
}

# http_ok URL: succeeds when URL answers 200.
http_ok() { [[ "$(http_get "$1")" == 200* ]]; }

summary() {
  section "summary"
  printf '%d checks passed\n' "$CG_PASSED"
  if ((${#CG_FAILED[@]})); then
    printf '%d failed:\n' "${#CG_FAILED[@]}"; printf '  - %s\n' "${CG_FAILED[@]}"
    return 1
  fi
}

now_ms() { date +%s%3N; }
# secs_since MS: seconds since a now_ms reading, one decimal.
secs_since() { local d=$(($(now_ms) - $1)); printf '%d.%d' $((d / 1000)) $((d % 1000 / 100)); }

# Teardown: each section registers what it starts (a command line), and everything registered runs,
# newest first, when the script exits for any reason. A section that tears down on its own clears its
# entries with cleanup_now, so that volumes and containers do not pile up between sections.
CG_CLEANUP=()
on_exit() { CG_CLEANUP+=("$1"); }
cleanup_now() {
  local i
  for ((i = ${#CG_CLEANUP[@]} - 1; i >= 0; i--)); do
    eval "${CG_CLEANUP[i]}" >/dev/null 2>&1 || true
  done
  CG_CLEANUP=()
}

# json_field JSON PATH: one field of a JSON document (PATH like .a.b), printed raw.
json_field() {
  node -e 'let v=JSON.parse(process.argv[1]);for(const k of process.argv[2].split(".").filter(Boolean))v=v?.[k];process.stdout.write(typeof v==="string"?v:JSON.stringify(v??null))' "$1" "$2"
}

# all_anchored OUTPUT: `context-guardian-recall --verify --all` said "<run> OK (anchored)" for every run
# (at least one), "log <writer> OK (...)" for every writer's log (at least one: each span writer keeps
# one, issue 29), and closed with "N run(s), M log(s) checked: all OK".
all_anchored() {
  local body runs logs; body="$(sed '$d' <<<"$1")"
  runs="$(grep -v '^log ' <<<"$body")"; logs="$(grep '^log ' <<<"$body")"
  [[ -n "$runs" && -n "$logs" ]] &&
    ! grep -qv ' OK (anchored)$' <<<"$runs" &&
    ! grep -qv '^log [^ ]* OK (' <<<"$logs" &&
    tail -1 <<<"$1" | grep -q 'checked: all OK$'
}

# stop_pids PIDFILE...: stops the processes named in the files, one after the other in the order given
# (dependents first: the API server cannot shut down once etcd is gone): SIGTERM, up to 15 s for its
# graceful exit, then SIGKILL, so that a stuck one cannot hold the teardown.
stop_pids() {
  local f pid
  for f in "$@"; do
    [[ -f "$f" ]] || continue
    pid="$(cat "$f")"
    kill "$pid" 2>/dev/null || continue
    wait_until 15 bash -c "! kill -0 $pid 2>/dev/null" || kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  return 0
}
