#!/usr/bin/env bash
# benches/eval_overhead.sh - what `redline eval` itself costs per case, without a model,
# and one end-to-end run against the tests' scripted model server.
#
# Builds a synthetic repository of COMMITS commits (default 2,500) with
# `git fast-import` from the stream `examples/eval_bench.rs history` writes (40 Rust
# files; one-line fixes with fix/overflow/crash/leak/race/panic/regression messages,
# small additions, test-only and docs-only edits, 80-line refactors), then:
#   overhead  mining (revert commits, expected lines) and scoring, timed in process,
#             for --limit 20 --clean 5, --limit 100 --clean 20 and every fix commit
#   e2e       `redline eval --mine REPO --limit 20 --clean 5 --parallel 2` (release
#             build, a child process) against the scripted server, which reports one
#             finding on line 5 of the first file it is shown: the score means nothing,
#             the run shows the pipeline and its wall time.
#
# Usage:   benches/eval_overhead.sh
# Env:     CARGO_TARGET_DIR as usual; COMMITS; PROFILE=dev for a debug build (slower
#          figures, no release build); EVAL_BENCH_KEEP=1 keeps the repository.
# Needs:   git. Numbers, not a test: no figure fails it.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d -t redline-eval-bench.XXXXXX)"
if [[ "${EVAL_BENCH_KEEP:-}" != "1" ]]; then
  trap 'rm -rf "$work"' EXIT
else
  echo "work directory: $work" >&2
fi

profile="${PROFILE:-release}"
echo "building redline and examples/eval_bench ($profile)..." >&2
(cd "$root" && cargo build --profile "$profile" --quiet --bin redline --example eval_bench)
[[ "$profile" == "dev" ]] && out=debug || out="$profile"
target="${CARGO_TARGET_DIR:-$root/target}/$out"
bench="$target/examples/eval_bench"

repo="$work/history"
git init --quiet --initial-branch=main "$repo"
"$bench" history "${COMMITS:-2500}" | git -C "$repo" fast-import --quiet
git -C "$repo" checkout --quiet main
echo "repository: $(git -C "$repo" rev-list --count HEAD) commits" >&2

"$bench" overhead "$repo"
"$bench" e2e "$target/redline" "$repo"
