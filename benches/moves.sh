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
set -euo pipefail

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
