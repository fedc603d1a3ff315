#!/usr/bin/env bash
# Load test of the webhook intake, side by side with Probot:
#   benches/webhook_load.sh [sqlite|postgres|probot|sqlite-busy|postgres-before]...
#   (default: sqlite postgres probot sqlite-busy)
#
# Each target receives the same signed ~30 KB pull_request payloads (64 PRs, a unique
# X-GitHub-Delivery per request) from wrk and benches/webhook_load.lua, on loopback:
#   sqlite, postgres: examples/webhook_server (release build; the real webhook handler and
#     queue, a no-op review runner and 4 workers draining the queue as fast as they can: on
#     SQLite their claims and completions join the intake's group commits, on PostgreSQL each
#     is a statement of its own);
#   sqlite-busy: the same with jobs that take 30 s (REDLINE_BENCH_JOB_MS), as real reviews
#     do: the 4 workers hold their jobs, the intake has the database to itself;
#   postgres-before: `postgres` with the build in BEFORE_BIN (an older webhook_server), to
#     compare two builds side by side in one run;
#   probot: a minimal Probot app (npm package `probot`, installed into a temporary directory)
#     with a no-op `pull_request` handler. Probot verifies the signature but neither stores
#     nor deduplicates deliveries.
# Runs per target:
#   1. closed loop at CONNECTIONS connections (max throughput);
#   2. paced: 50 connections x one request per 100 ms = ~500 requests/s offered.
# wrk has no rate control (wrk2's -R is not packaged by Debian); the paced run uses wrk's
# delay() hook, which paces each connection but, unlike wrk2, does not correct for
# coordinated omission (a stalled server delays the next requests instead of queueing them).
# With 2 or more CPUs the server is pinned to CPU 0 and wrk to CPU 1 (taskset), so each
# server gets one core. Peak RSS is the server process's VmHWM after its runs.
# steal% is the share of the machine's CPU time the hypervisor gave to other guests during a
# run (/proc/stat): a VM slowed by its neighbours shows it, whichever target was running.
#
# Environment: DURATION (default 10s), CONNECTIONS (closed-loop connection counts, default
# "32"), ROUNDS (default 1: the target list is run that many times in turn, and each round's
# closed-loop req/s at the first connection count is given as a multiple of that round's
# Probot, so drifts in the machine's speed fall on both sides of each ratio), MODE (all | paced: skip the closed-loop runs), PORT (18080), PROBOT_VERSION (14),
# REDLINE_BENCH_POSTGRES_URL (postgres://postgres@127.0.0.1:5432/test; a scratch schema is
# created and dropped; the transactions committed in that database per stored delivery are
# printed, so a database of the load test's own gives a clean count), BEFORE_BIN, CARGO_TARGET_DIR, SERVER_BIN (a prebuilt webhook_server to run instead
# of building one, e.g. an older build to compare in the same session). Traffic goes to 127.0.0.1 only; every run is
# bounded by DURATION. Needs cargo, jq, openssl, curl, psql (postgres), node and npm (probot);
# installs wrk with apt-get when missing.
set -euo pipefail

cd "$(dirname "$0")/.."
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(sqlite postgres probot sqlite-busy)
duration=${DURATION:-10s}
connection_counts=${CONNECTIONS:-32}
port=${PORT:-18080}
pg_base=${REDLINE_BENCH_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test}
target_dir=${CARGO_TARGET_DIR:-target}
secret="bench-secret-$RANDOM$RANDOM"
work=$(mktemp -d)
server_pid=""
schema=""
results=()

cleanup() {
  if [ -n "$server_pid" ]; then kill -INT "$server_pid" 2>/dev/null || true; sleep 1; fi
  if [ -n "$schema" ]; then psql -q "$pg_base" -c "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

server_cpu=()
client_cpu=()
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
  server_cpu=(taskset -c 0)
  client_cpu=(taskset -c 1)
fi

if ! command -v wrk >/dev/null; then
  echo "installing wrk" >&2
  apt-get update -qq && apt-get install -y -qq wrk >/dev/null
fi

for target in "${targets[@]}"; do
  case "$target" in
    sqlite|postgres|sqlite-busy) need_redline=1 ;;
    postgres-before) need_redline=1
      [ -x "${BEFORE_BIN:-}" ] || { echo "postgres-before needs BEFORE_BIN (a webhook_server)" >&2; exit 2; } ;;
    probot) need_probot=1 ;;
    *) echo "unknown target $target (sqlite|postgres|probot|sqlite-busy|postgres-before)" >&2; exit 2 ;;
  esac
done

if [ -n "${need_redline:-}" ]; then
  if [ -n "${SERVER_BIN:-}" ]; then
    server_bin=$SERVER_BIN
  else
    cargo build --release --quiet --example webhook_server
    server_bin="$target_dir/release/examples/webhook_server"
  fi
fi

if [ -n "${need_probot:-}" ]; then
  echo "installing probot@${PROBOT_VERSION:-14} into a temporary directory" >&2
  mkdir -p "$work/probot"
  (cd "$work/probot" && npm init -y >/dev/null \
    && npm install --no-audit --no-fund --loglevel=error "probot@${PROBOT_VERSION:-14}" >/dev/null)
  # The app: acknowledge pull_request events and do nothing else.
  cat > "$work/probot/app.mjs" <<'EOF'
export default (app) => {
  app.on("pull_request", async () => {});
};
EOF
  # Probot needs an App id and key to start; they are never used (no GitHub call is made).
  openssl genrsa -out "$work/probot/key.pem" 2048 2>/dev/null
fi

# 64 payloads (PR numbers 1..64), padded to ~30 KB, each with its signature.
mkdir -p "$work/payloads"
padding=$(printf 'Load-test description line. %.0s' $(seq 1 170))
for i in $(seq 1 64); do
  jq -c --argjson n "$i" --arg pad "$padding" \
    '.number = $n | .pull_request.number = $n | .pull_request.body = $pad' \
    tests/fixtures/webhooks/pull_request/opened.payload.json > "$work/payloads/$i.json"
  printf 'sha256=%s' "$(openssl dgst -sha256 -hmac "$secret" -r < "$work/payloads/$i.json" | cut -d' ' -f1)" \
    > "$work/payloads/$i.sig"
done
echo "payload size: $(wc -c < "$work/payloads/1.json") bytes"

# start_server TARGET: starts it in the background and waits until it answers. server_pid is
# the server process itself (each launcher execs), for its peak RSS.
start_server() {
  rm -f "$work/server.pid"
  case "$1" in
    sqlite|postgres|sqlite-busy|postgres-before)
      bin=$server_bin; [ "$1" = postgres-before ] && bin=$BEFORE_BIN
      REDLINE_WEBHOOK_SECRET="$secret" REDLINE_BENCH_JOB_MS="$job_ms" launch "${server_cpu[@]}" "$bin" "$url" "127.0.0.1:$port" ;;
    probot)
      (cd "$work/probot" && APP_ID=1 PRIVATE_KEY_PATH="$work/probot/key.pem" \
        WEBHOOK_SECRET="$secret" HOST=127.0.0.1 PORT="$port" LOG_LEVEL=warn NODE_ENV=production \
        launch "${server_cpu[@]}" node node_modules/probot/bin/probot.js run ./app.mjs) ;;
  esac
  for _ in $(seq 1 150); do
    if [ -s "$work/server.pid" ] && curl -s -o /dev/null "http://127.0.0.1:$port/" 2>/dev/null; then
      server_pid=$(cat "$work/server.pid")
      return 0
    fi
    sleep 0.1
  done
  echo "$1 did not start:" >&2; cat "$work/server.log" >&2; exit 1
}

# launch COMMAND...: runs COMMAND in the background, its pid in $work/server.pid.
launch() {
  bash -c 'echo $$ > "$0"; exec "$@"' "$work/server.pid" "$@" > "$work/server.log" 2>&1 &
}

# Transactions committed in the PostgreSQL database so far (all its sessions: give the load
# test a database of its own for a clean count).
xact_commits() {
  psql -tAq "$pg_base" -c "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
}

# Peak resident set of the server process so far, in MiB.
peak_rss_mib() {
  awk '/^VmHWM:/ { printf "%.0f", $2 / 1024 }' "/proc/$server_pid/status" 2>/dev/null || echo "?"
}

stop_server() {
  kill -INT "$server_pid"
  for _ in $(seq 1 300); do  # at most 30 s (the worker pool's shutdown deadline)
    grep -qs '^State:[[:space:]]*[^Z]' "/proc/$server_pid/status" || break
    sleep 0.1
  done
  server_pid=""
  grep '^intake:' "$work/server.log" | sed "s/^/$target   /" || true
  if grep -qE 'WARN|ERROR' "$work/server.log"; then
    echo "$target server warnings/errors ($(grep -cE 'WARN|ERROR' "$work/server.log") lines), first 5:"
    grep -E 'WARN|ERROR' "$work/server.log" | head -5
  fi
}

# CPU time the hypervisor gave to other guests, and all CPU time, in ticks since boot (Linux).
cpu_ticks() {
  awk '/^cpu / { print $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat 2>/dev/null || echo "0 0"
}

# run_wrk LABEL CONNECTIONS PAUSE_MS: one wrk run; prints and keeps its RESULT line, with the
# share of CPU time stolen by the hypervisor during the run (a run with a high share was slowed
# by other guests, whatever the target).
run_wrk() {
  local label=$1 connections=$2 pause=$3
  local threads=$(( connections < 2 ? 1 : 2 ))
  local line before after
  before=$(cpu_ticks)
  line=$("${client_cpu[@]}" wrk -t"$threads" -c"$connections" -d"$duration" --timeout 5s \
    -s benches/webhook_load.lua "http://127.0.0.1:$port$path" -- "$work/payloads" 64 "$pause" "$status" \
    | grep '^RESULT' || true)
  after=$(cpu_ticks)
  line="${line#RESULT } steal_pct=$(awk -v a="$before" -v b="$after" 'BEGIN {
    split(a, x, " "); split(b, y, " "); total = y[2] - x[2]
    printf "%.1f", (total > 0 ? (y[1] - x[1]) * 100 / total : 0) }')"
  printf '%-11s %-26s %s\n' "$target" "$label" "$line"
  results+=("$target|$label|$line")
}

rounds=${ROUNDS:-1}
first_connections=${connection_counts%% *}
for round in $(seq 1 "$rounds"); do
for kind in "${targets[@]}"; do
  target=$kind
  [ "$rounds" -gt 1 ] && target="$kind:r$round"
  case "$kind" in
    sqlite) url="sqlite://$work/bench.db"; path=/webhook; status=202; job_ms=0 ;;
    sqlite-busy) url="sqlite://$work/bench-busy.db"; path=/webhook; status=202; job_ms=30000 ;;
    postgres|postgres-before)
      schema="redline_bench_$$"
      psql -q "$pg_base" -c "CREATE SCHEMA $schema" >/dev/null
      sep='?'; [[ "$pg_base" == *\?* ]] && sep='&'
      url="$pg_base${sep}options[search_path]=$schema"; path=/webhook; status=202; job_ms=0
      xacts_before=$(xact_commits) ;;
    probot) path=/api/github/webhooks; status=200 ;;
  esac
  start_server "$kind"
  case "${MODE:-all}" in
    paced) ;;
    *) for connections in $connection_counts; do
         run_wrk "closed-loop c=$connections" "$connections" 0
       done ;;
  esac
  run_wrk "paced ~500/s (c=50,100ms)" 50 100
  rss=$(peak_rss_mib)
  results+=("$target|peak RSS|$rss MiB")
  if [ "$kind" != probot ]; then
    curl -s "http://127.0.0.1:$port/metrics" \
      | grep -E '^redline_(webhook_deliveries_total|queue_depth|jobs\{|jobs_total)' \
      | sed "s/^/$target   metrics: /" || true
  fi
  stop_server
  if [ -n "$schema" ]; then
    # A session's counts reach pg_stat_database within a second of its end.
    sleep 1
    stored=$(psql -tAq "$pg_base" -c "SELECT count(*) FROM $schema.deliveries")
    xacts=$(( $(xact_commits) - xacts_before ))
    echo "$target   transactions: $xacts committed for $stored deliveries ($(awk -v x="$xacts" -v d="$stored" 'BEGIN { printf "%.2f", (d > 0 ? x / d : 0) }') per delivery)"
  fi
  if [ -n "$schema" ]; then PGOPTIONS=--client-min-messages=warning psql -q "$pg_base" -c "DROP SCHEMA $schema CASCADE" >/dev/null; schema=""; fi
done
done

# Side by side: one row per target and run.
field() { sed -n "s/.*$1=\([^ ]*\).*/\1/p" <<<"$2"; }
echo
printf '%-11s %-26s %9s %9s %9s %9s %8s %7s %s\n' target run req/s p50_ms p99_ms max_ms failed steal% peak_rss
for entry in "${results[@]}"; do
  IFS='|' read -r target label line <<<"$entry"
  [ "$label" = "peak RSS" ] && continue
  rss=$(printf '%s\n' "${results[@]}" | sed -n "s/^$target|peak RSS|//p")
  non_ok=$(field non_ok "$line"); errors=$(field errors "$line")
  printf '%-11s %-26s %9s %9s %9s %9s %8s %7s %s\n' "$target" "$label" "$(field rps "$line")" \
    "$(field p50_ms "$line")" "$(field p99_ms "$line")" "$(field max_ms "$line")" \
    "$(( ${non_ok:-0} + ${errors:-0} ))" "$(field steal_pct "$line")" "$rss"
done

# Each round's closed-loop req/s as a multiple of the same round's Probot.
closed_rps() { # TARGET -> req/s of its closed-loop run at the first connection count
  local entry
  for entry in "${results[@]}"; do
    IFS='|' read -r name label line <<<"$entry"
    if [ "$name" = "$1" ] && [ "$label" = "closed-loop c=$first_connections" ]; then
      field rps "$line"; return
    fi
  done
}
if [[ " ${targets[*]} " == *" probot "* ]] && [ "${MODE:-all}" != paced ]; then
  echo
  for round in $(seq 1 "$rounds"); do
    suffix=""; [ "$rounds" -gt 1 ] && suffix=":r$round"
    probot=$(closed_rps "probot$suffix")
    [ -n "$probot" ] && [ "$probot" != 0 ] || continue
    ratios=""
    for kind in "${targets[@]}"; do
      [ "$kind" = probot ] && continue
      rps=$(closed_rps "$kind$suffix")
      [ -n "$rps" ] && ratios+=" $kind $(awk -v a="$rps" -v b="$probot" 'BEGIN { printf "%.2f", a / b }')x"
    done
    echo "round $round: Probot $probot req/s at c=$first_connections;$ratios"
  done
fi
