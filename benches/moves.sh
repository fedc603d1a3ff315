#!/usr/bin/env bash
# benches/moves.sh - what showing moved code as moves saves on real release-to-release changes.
#
# Shapes each range of a git repository with two `redline` binaries (BEFORE: a build
# without move detection, e.g. of main; AFTER: this build) through `redline context
# --format json`, and prints one row per range and binary:
#   files        changed files
#   moves        moved blocks found / head lines they span (AFTER only)
#   move_tok     tokens of those blocks as shown (move lines, edits, moved-away lines)
#                / as plain diff lines (every + and - line of the blocks)
#   shaped       tokens of the first message (capped by the stage-1 budget)
#   sections     tokens of every reviewable file's numbered section (shown or listed
#                for size): what the review sends across the first message and tasks
#   shown        reviewable changed lines printed in the first message / all of them
#
# Usage:   BEFORE=/path/to/redline-main AFTER=/path/to/redline benches/moves.sh REPO BASE..HEAD...
# Example: git clone shared/eval-repos/marshmallow.bundle /tmp/marshmallow
#          benches/moves.sh /tmp/marshmallow 55932fa..349213c 349213c..31828bf
# Numbers, not a test: no figure fails it. Needs python3.
#
# Scaling: AFTER=/path/to/redline benches/moves.sh --scaling [SMALL LARGE]
#   builds two repositories of SMALL and LARGE moved lines (default 40000 and 160000):
#   8-line functions half moved to another module and half kept, in a shuffled order.
#   Times `redline context` on each side by side and prints the moves found, the
#   seconds and the ratios of lines and of time: linear shaping keeps the time ratio
#   near the lines ratio (a quadratic step shows as the square of it).
set -euo pipefail

if [[ "${1:-}" == "--scaling" ]]; then
  after="${AFTER:?set AFTER to a redline binary}"
  small="${2:-40000}"
  large="${3:-160000}"
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  make_repo() {
    python3 - "$1" "$2" <<'PY'
import os, random, subprocess, sys
lines, where = int(sys.argv[1]), sys.argv[2]
os.makedirs(where)
def git(*args):
    subprocess.run(["git", "-c", "user.name=bench", "-c", "user.email=bench@example.com", *args],
                   cwd=where, check=True, stdout=subprocess.DEVNULL)
blocks = [[f"def helper_{b}(value, other):"]
          + [f"    result_{b}_{k} = compute_{k}(value, other, {b * 31 + k})" for k in range(6)]
          + ["    return result"] for b in range(lines // 8)]
git("init", "-q", "-b", "main")
open(f"{where}/a.py", "w").write("".join(l + "\n" for b in blocks for l in b))
git("add", "-A"); git("commit", "-qm", "base")
random.Random(7).shuffle(blocks)
half = len(blocks) // 2
open(f"{where}/a.py", "w").write("".join(l + "\n" for b in blocks[:half] for l in b))
open(f"{where}/b.py", "w").write("".join(l + "\n" for b in blocks[half:] for l in b))
git("add", "-A"); git("commit", "-qm", "shuffle and move")
PY
  }
  printf '%-8s %8s %10s\n' lines moves seconds
  declare -A secs
  for n in "$small" "$large"; do
    make_repo "$n" "$work/r$n"
    start=$(date +%s.%N)
    blocks=$("$after" context --repo "$work/r$n" --base HEAD~1 --head HEAD --model gpt-4o --format json |
      python3 -c 'import json, sys; print((json.load(sys.stdin).get("moves") or {}).get("blocks", 0))')
    end=$(date +%s.%N)
    secs[$n]=$(python3 -c "print(f'{$end - $start:.2f}')")
    printf '%-8s %8s %10s\n' "$n" "$blocks" "${secs[$n]}"
  done
  python3 -c "print(f'ratio: lines x{$large / $small:.1f}, time x{${secs[$large]} / max(${secs[$small]}, 0.01):.1f}')"
  exit 0
fi

repo="$1"
shift
before="${BEFORE:?set BEFORE to a redline binary without move detection}"
after="${AFTER:?set AFTER to a redline binary with move detection}"
model="${MODEL:-gpt-4o}"

printf '%-22s %-7s %6s %12s %16s %8s %9s %12s\n' range binary files moves move_tok shaped sections shown
for range in "$@"; do
  base="${range%%..*}"
  head="${range##*..}"
  for side in before after; do
    bin="$before"
    [[ "$side" == after ]] && bin="$after"
    "$bin" context --repo "$repo" --base "$base" --head "$head" --model "$model" --format json |
      python3 -c '
import json, sys
range_, side = sys.argv[1], sys.argv[2]
d = json.load(sys.stdin)
m = d.get("moves")
sections = sum(f["tokens"] for f in d["files"]
               if f["status"] == "shown" or (f["status"] == "listed" and f["reason"] == "over budget"))
moves = "{}/{}".format(m["blocks"], m["lines"]) if m else "-"
move_tok = "{}/{}".format(m["tokens"], m["raw_tokens"]) if m else "-"
c = d["changed_lines"]
print("{:<22} {:<7} {:>6} {:>12} {:>16} {:>8} {:>9} {:>12}".format(
    range_, side, len(d["files"]), moves, move_tok, d["tokens"]["shaped"], sections,
    "{}/{}".format(c["shown"], c["total"])))
' "$range" "$side"
  done
done
