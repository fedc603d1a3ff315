#!/usr/bin/env bash
# Times Redline's work-tree search (examples/search_bench.rs) against ripgrep on
# a large real tree, both as separate processes printing every match.
#
# Usage: benches/search_vs_rg.sh [DIR]     (default: ~/.cargo/registry/src)
#
# For each pattern: 5 interleaved runs of each tool with output to /dev/null,
# median wall time, ratio Redline/rg, and the number of matching lines each
# printed. Both search hidden files and honour ignore files the same way
# (rg --hidden; Redline always searches hidden files and skips .git).
set -euo pipefail

DIR="${1:-$HOME/.cargo/registry/src}"
RUNS=5
RG="${RG:-/usr/bin/rg}"
cd "$(dirname "$0")/.."

cargo build --quiet --release --example search_bench
BENCH="${CARGO_TARGET_DIR:-target}/release/examples/search_bench"

# name | rg flags | search_bench flags | pattern (the last field keeps any further `|`)
PATTERNS=(
  "literal|-F|--fixed|impl Drop for"
  "word|||\\bunwrap\\b"
  "alternation|||TODO|FIXME|XXX"
  "rare|-F|--fixed|EWOULDBLOCK"
  "common|||fn "
  "ignore-case|-i|--ignore-case|deprecated"
)

now_ns() { date +%s%N; }

# Runs "$@" with output discarded; prints the wall time in milliseconds.
time_ms() {
  local start end
  start=$(now_ns)
  "$@" >/dev/null 2>&1 || true
  end=$(now_ns)
  echo $(((end - start) / 1000000))
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "tree: $DIR ($(find "$DIR" -type f | wc -l) files), $RUNS runs each, median wall time"
# Warm the page cache so neither tool pays for the first read.
"$RG" --hidden -c zzzz_warmup "$DIR" >/dev/null 2>&1 || true

printf '%-12s %-16s %9s %9s %7s %10s %10s\n' pattern regex rg_ms redline_ms ratio rg_lines rl_lines
for entry in "${PATTERNS[@]}"; do
  IFS='|' read -r name rg_flag rl_flag pattern <<<"$entry"
  rg_cmd=("$RG" -n --no-heading --hidden)
  rl_cmd=("$BENCH")
  [[ -n "$rg_flag" ]] && rg_cmd+=("$rg_flag")
  [[ -n "$rl_flag" ]] && rl_cmd+=("$rl_flag")
  rg_cmd+=(-e "$pattern" "$DIR")
  rl_cmd+=("$pattern" "$DIR")

  rg_times=() rl_times=()
  for ((i = 0; i < RUNS; i++)); do
    rg_times+=("$(time_ms "${rg_cmd[@]}")")
    rl_times+=("$(time_ms "${rl_cmd[@]}")")
  done
  rg_med=$(printf '%s\n' "${rg_times[@]}" | median)
  rl_med=$(printf '%s\n' "${rl_times[@]}" | median)
  ratio=$(awk -v a="$rl_med" -v b="$rg_med" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
  rg_lines=$("${rg_cmd[@]}" 2>/dev/null | wc -l)
  rl_lines=$("${rl_cmd[@]}" 2>/dev/null | wc -l)
  printf '%-12s %-16s %9s %9s %7s %10s %10s\n' "$name" "$pattern" "$rg_med" "$rl_med" "$ratio" "$rg_lines" "$rl_lines"
done
