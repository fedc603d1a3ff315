#!/usr/bin/env bash
# benches/context_corpus.sh - stage-1 shaping measured on real release-to-release changes.
#
# For each crate in CORPUS below, fetch two consecutive published versions with
# cargo itself (one throwaway cargo project per version, then `cargo vendor`),
# commit version A as the base and version B as the head of a temporary git
# repository, and shape that change with examples/context_bench.rs (git2 diff of
# the two trees, three lines of context, then `redline::context::shape_change`).
# Last, a synthetic change of 5,000 files measures the time on a huge change,
# in memory (shape_change alone) and as a git repository (`redline context`).
#
# One row per change:
#   files       changed files (all of them, noise included)
#   reviewable  non-blank added head lines of files that are not noise
#   naive_tok   full head content of every changed file + the full unified diff
#   shaped_tok  the first user message Redline sends instead (real tokens)
#   reduction   1 - shaped/naive
#   shown       reviewable lines printed in the message
#   coverage    reviewable lines printed or whose file is listed by name (goal: 100%)
#   time_ms     wall time of shape_change alone (release build)
#
# Usage:   benches/context_corpus.sh [budget|auto] [model]
#          (default: auto = stage1_budget of the model; model gpt-4o)
# Env:     CARGO_TARGET_DIR as usual; CONTEXT_BENCH_KEEP=1 keeps the work directory;
#          CONTEXT_BENCH_DUMP=1 prints each shaped message on stderr.
# Needs:   git, and the package registry reachable through cargo on the first run
#          (cargo caches the crates afterwards). Numbers, not a test: no figure fails it.
set -euo pipefail

budget="${1:-auto}"
model="${2:-gpt-4o}"

# name old-version new-version
CORPUS=(
  "tokio 1.37.0 1.38.0"
  "rand 0.8.5 0.9.0"
  "clap_builder 4.4.18 4.5.0"
  "regex-syntax 0.7.5 0.8.0"
  "hashbrown 0.14.5 0.15.0"
  "serde 1.0.203 1.0.204"
  "anyhow 1.0.86 1.0.87"
)

root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d -t redline-context-bench.XXXXXX)"
if [[ "${CONTEXT_BENCH_KEEP:-}" != "1" ]]; then
  trap 'rm -rf "$work"' EXIT
else
  echo "work directory: $work" >&2
fi

echo "building examples/context_bench.rs (release)..." >&2
(cd "$root" && cargo build --release --quiet --example context_bench --bin redline)
bin="${CARGO_TARGET_DIR:-$root/target}/release/examples/context_bench"
redline="${CARGO_TARGET_DIR:-$root/target}/release/redline"

# shellcheck source=benches/corpus.sh
source "$root/benches/corpus.sh"

"$bin" header
for entry in "${CORPUS[@]}"; do
  read -r name old new <<< "$entry"
  if ! repo="$(release_change "$name" "$old" "$new")"; then
    echo "skipping $name: could not fetch $old and $new with cargo" >&2
    continue
  fi
  "$bin" git "$repo" base head "$name $old -> $new" "$budget" "$model"
done
"$bin" synthetic 5000 "$budget" "$model"

# The same synthetic change end to end: `redline context` on a git repository.
if [[ -x "$redline" ]]; then
  "$bin" synthetic-repo "$work/synthetic" 5000
  git -C "$work/synthetic" gc -q  # packed, as a real repository mostly is
  started=$(date +%s%N)
  "$redline" context --repo "$work/synthetic" --base base --head head --model "$model" > /dev/null
  echo "redline context, synthetic 5000 files: $(( ($(date +%s%N) - started) / 1000000 )) ms (release build, wall)"
fi
