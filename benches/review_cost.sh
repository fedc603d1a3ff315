#!/usr/bin/env bash
# benches/review_cost.sh - what whole reviews cost, on real changes, with a scripted model.
#
# For each crate in CORPUS below (two consecutive published versions, fetched with
# cargo itself as benches/context_corpus.sh does), and for the fixture change of
# examples/strategy_costs.rs, run `redline review --strategy auto --format json`
# (release build) against the tests' scripted OpenAI-compatible server with its
# prompt-cache simulation, in two behaviours:
#   submit   the model submits its review in its first reply
#   explore  every review conversation calls diff, read_file, search, then submits
# The planner (plan_execute) gets one task per directory (at most 8 files each).
#
# One row per change and behaviour, all measured from the server's own record:
#   strategy   what `auto` chose          calls    model calls
#   prompt     prompt tokens (o200k_base, as the server counts them)
#   cached     of which cached: longest prefix shared with any earlier request,
#              in 128-token blocks, from 1,024 tokens (OpenAI's rule)
#   output     completion tokens          cost_$   at gpt-4.1-mini prices
#              ($0.40 input, $0.10 cached input, $1.60 output per million tokens)
#   cov_rl     Redline's stats.coverage
#   cov_ind    independent coverage: share of reviewable changed lines (added,
#              non-blank, in files Redline's noise rules keep) whose text the
#              server received under that file's own section (numbered diff,
#              read_file window or search hit)
#   cpu_s      user+system CPU seconds of the redline process (server excluded)
#   tok/line   prompt tokens per covered line
#   ref_t/l    the same for a reference single-call reviewer: one request with as
#              many whole files' diffs as fit in 32k tokens, in review order
#   ratio      tok/line / ref_t/l
#   cache%     cached share of the prompt tokens of calls after each conversation's first
#
# Usage:   benches/review_cost.sh
# Env:     CARGO_TARGET_DIR as usual; REVIEW_COST_KEEP=1 keeps the work directory;
#          REVIEW_COST_UNCOVERED=1 lists on stderr the reviewable lines never received;
#          REVIEW_COST_BREAKDOWN=1 splits each run's prompt tokens on stderr by kind
#          (tools, system, planner call, task prose, overview, file headers, @@ lines,
#          added/removed/context lines, line numbers, notes, JSON framing).
# Needs:   git, and the package registry reachable through cargo on the first run.
#          Numbers, not a test: no figure fails it.
set -euo pipefail

# name old-version new-version
CORPUS=(
  "anyhow 1.0.86 1.0.87"
  "regex-syntax 0.7.5 0.8.0"
  "tokio 1.37.0 1.38.0"
  "axum 0.6.20 0.7.0"
  "hyper 0.14.28 1.0.0"
)

root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d -t redline-review-cost.XXXXXX)"
if [[ "${REVIEW_COST_KEEP:-}" != "1" ]]; then
  trap 'rm -rf "$work"' EXIT
else
  echo "work directory: $work" >&2
fi

echo "building redline and examples/review_cost (release)..." >&2
(cd "$root" && cargo build --release --quiet --bin redline --example review_cost)
target="${CARGO_TARGET_DIR:-$root/target}/release"
bin="$target/examples/review_cost"
redline="$target/redline"

# shellcheck source=benches/corpus.sh
source "$root/benches/corpus.sh"

"$bin" header
"$bin" fixture "$redline"
for entry in "${CORPUS[@]}"; do
  read -r name old new <<< "$entry"
  if ! repo="$(release_change "$name" "$old" "$new")"; then
    echo "skipping $name: could not fetch $old and $new with cargo" >&2
    continue
  fi
  "$bin" git "$redline" "$repo" base head "$name $old -> $new"
done
