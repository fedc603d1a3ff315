#!/usr/bin/env bash
# Load test of the webhook intake: `benches/webhook_load.sh [sqlite|postgres]...` (default: both).
#
# Starts examples/webhook_server (release build, no-op review runner, 4 workers draining the
# queue) on loopback and drives POST /webhook with wrk and benches/webhook_load.lua: signed
# ~30 KB pull_request payloads (64 PRs), a unique X-GitHub-Delivery per request.
#   1. closed loop at several connection counts (max throughput);
#   2. paced: 50 connections x one request per 100 ms = ~500 requests/s offered.
# wrk has no rate control (wrk2's -R is not packaged by Debian); the paced run uses wrk's
# delay() hook, which paces each connection but, unlike wrk2, does not correct for
# coordinated omission (a stalled server delays the next requests instead of queueing them).
#
# Environment: DURATION (default 10s), MODE (all | paced: skip the closed-loop runs), PORT (18080), REDLINE_BENCH_POSTGRES_URL
# (postgres://postgres@127.0.0.1:5432/test; a scratch schema is created and dropped),
# CARGO_TARGET_DIR. Traffic goes to 127.0.0.1 only; every run is bounded by DURATION.
set -euo pipefail

cd "$(dirname "$0")/.."
backends=("$@")
[ ${#backends[@]} -eq 0 ] && backends=(sqlite postgres)
duration=${DURATION:-10s}
port=${PORT:-18080}
pg_base=${REDLINE_BENCH_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test}
target_dir=${CARGO_TARGET_DIR:-target}
secret="bench-secret-$RANDOM$RANDOM"
work=$(mktemp -d)
server_pid=""
schema=""

cleanup() {
  if [ -n "$server_pid" ]; then kill -INT "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  if [ -n "$schema" ]; then psql -q "$pg_base" -c "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

if ! command -v wrk >/dev/null; then
  echo "installing wrk" >&2
  apt-get update -qq && apt-get install -y -qq wrk >/dev/null
fi

cargo build --release --quiet --example webhook_server
server_bin="$target_dir/release/examples/webhook_server"

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

start_server() {
  local url=$1
  REDLINE_WEBHOOK_SECRET="$secret" "$server_bin" "$url" "127.0.0.1:$port" > "$work/server.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 100); do
    curl -sf "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "server did not start:" >&2; cat "$work/server.log" >&2; exit 1
}

stop_server() {
  kill -INT "$server_pid"; wait "$server_pid" || true; server_pid=""
  if grep -qE 'WARN|ERROR' "$work/server.log"; then
    echo "$backend server warnings/errors ($(grep -cE 'WARN|ERROR' "$work/server.log") lines), first 5:"
    grep -E 'WARN|ERROR' "$work/server.log" | head -5
  fi
}

run_wrk() {
  local label=$1 connections=$2 pause=$3
  local threads=$(( connections < 2 ? 1 : 2 ))
  local line
  line=$(wrk -t"$threads" -c"$connections" -d"$duration" --timeout 5s \
    -s benches/webhook_load.lua "http://127.0.0.1:$port/webhook" -- "$work/payloads" 64 "$pause" \
    | grep '^RESULT' || true)
  printf '%-10s %-26s %s\n' "$backend" "$label" "${line#RESULT }"
}

for backend in "${backends[@]}"; do
  case "$backend" in
    sqlite) url="sqlite://$work/bench.db" ;;
    postgres)
      schema="redline_bench_$$"
      psql -q "$pg_base" -c "CREATE SCHEMA $schema" >/dev/null
      sep='?'; [[ "$pg_base" == *\?* ]] && sep='&'
      url="$pg_base${sep}options[search_path]=$schema" ;;
    *) echo "unknown backend $backend (sqlite|postgres)" >&2; exit 2 ;;
  esac
  start_server "$url"
  case "${MODE:-all}" in
    paced) ;;
    *) for connections in 1 8 32 64; do
         run_wrk "closed-loop c=$connections" "$connections" 0
       done ;;
  esac
  run_wrk "paced ~500/s (c=50,100ms)" 50 100
  curl -s "http://127.0.0.1:$port/metrics" \
    | grep -E '^redline_(webhook_deliveries_total|queue_depth|jobs\{|jobs_total)' \
    | sed "s/^/$backend   metrics: /"
  stop_server
  if [ -n "$schema" ]; then psql -q "$pg_base" -c "DROP SCHEMA $schema CASCADE" >/dev/null; schema=""; fi
done
