#!/usr/bin/env bash
# benches/context_after.sh - the first message's tokens under each after-context rule,
# on real commits of the bundled histories (issue #41, item 7).
#
# For each git bundle (default: both bundled histories), clone it to a scratch
# directory and pick its commits deterministically: the newest COMMITS (default 30)
# non-merge commits whose subject names a fix or a feature (fix, add, support,
# implement, allow, handle; not dependency bumps) and that change 2 to 600 lines of
# source (`*.rs`, `*.py`, not tests or docs). Each commit is shaped with `redline context
# --format json` (its parent as base) once per rule, the rule chosen with the
# benchmark knob REDLINE_BENCH_CONTEXT_AFTER (`N` lines, `block`, `block:N`;
# not a setting), and the first message's tokens (`tokens.shaped`) are compared
# with the first rule's (today's, `2`).
#
# Prints one row per commit (tokens per rule), then per history and overall: the
# median and total tokens per rule, and the median and total increase over the
# first rule.
#
# Usage:   benches/context_after.sh [BUNDLE...]
# Env:     RULES="2 6 block" (the first is the baseline), COMMITS=30, MODEL=gpt-4.1,
#          REDLINE=path/to/redline (default: a debug build of this checkout),
#          CONTEXT_AFTER_KEEP=1 keeps the scratch directory.
# Needs:   git, python3. Deterministic: no model, no network. Numbers, not a test.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
rules="${RULES:-2 6 block}"
commits="${COMMITS:-30}"
model="${MODEL:-gpt-4.1}"
if [[ $# -gt 0 ]]; then
  bundles=("$@")
else
  bundles=("$root/../shared/eval-repos/bytes.bundle" "$root/../shared/eval-repos/marshmallow.bundle")
fi

work="$(mktemp -d -t redline-context-after.XXXXXX)"
if [[ "${CONTEXT_AFTER_KEEP:-}" != "1" ]]; then
  trap 'rm -rf "$work"' EXIT
else
  echo "work directory: $work" >&2
fi

redline="${REDLINE:-}"
if [[ -z "$redline" ]]; then
  echo "building redline (debug)..." >&2
  (cd "$root" && cargo build --quiet --bin redline)
  redline="${CARGO_TARGET_DIR:-$root/target}/debug/redline"
fi
# No user config: only the knob differs between runs.
export XDG_CONFIG_HOME="$work/config"
mkdir -p "$XDG_CONFIG_HOME"

# pick REPO: the commits to shape, newest first
pick() {
  git -C "$1" log --no-merges --format='@%h %s' --numstat -- \
    '*.rs' '*.py' ':!tests/**' ':!test/**' ':!docs/**' ':!benches/**' |
    awk -v want="$commits" '
      /^@/ { flush(); commit = substr($1, 2); $1 = ""; subject = tolower($0); lines = 0; next }
      NF == 3 && $1 != "-" { lines += $1 + $2 }
      END { flush() }
      function flush() {
        if (commit != "" && subject ~ /fix|add|support|implement|allow|handle/ && subject !~ /^ *bump / \
            && lines >= 2 && lines <= 600 && picked < want) { print commit; picked++ }
        commit = ""
      }'
}

rows="$work/rows.tsv"
: > "$rows"
for bundle in "${bundles[@]}"; do
  name="$(basename "$bundle" .bundle)"
  repo="$work/$name"
  git clone --quiet "$bundle" "$repo"
  for commit in $(pick "$repo"); do
    line="$name	$commit"
    for rule in $rules; do
      tokens="$(REDLINE_BENCH_CONTEXT_AFTER="$rule" "$redline" context --repo "$repo" \
        --base "$commit^" --head "$commit" --model "$model" --format json 2> /dev/null |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["tokens"]["shaped"])')" || tokens="-"
      line="$line	$tokens"
    done
    echo "$line" >> "$rows"
  done
done

python3 - "$rows" $rules <<'PY'
import statistics, sys
path, rules = sys.argv[1], sys.argv[2:]
rows = [l.rstrip("\n").split("\t") for l in open(path) if l.strip()]
rows = [r for r in rows if "-" not in r[2:]]
print("history      commit   " + "".join(f"{r:>10}" for r in rules))
for r in rows:
    print(f"{r[0]:<12} {r[1]:<8} " + "".join(f"{int(t):>10}" for t in r[2:]))
def summary(label, group):
    if not group:
        return
    print(f"\n{label}: {len(group)} commits")
    base = [int(r[2]) for r in group]
    for i, rule in enumerate(rules):
        tokens = [int(r[2 + i]) for r in group]
        extra = [t - b for t, b in zip(tokens, base)]
        share = [(t - b) / b for t, b in zip(tokens, base) if b]
        print(f"  {rule:>8}: median {statistics.median(tokens):>8.0f}  total {sum(tokens):>8}"
              f"  increase median {statistics.median(extra):>+6.0f} ({statistics.median(share):+.1%})"
              f"  total {sum(extra):>+7} ({sum(extra) / sum(base):+.1%})")
for name in dict.fromkeys(r[0] for r in rows):
    summary(name, [r for r in rows if r[0] == name])
summary("all", rows)
PY
