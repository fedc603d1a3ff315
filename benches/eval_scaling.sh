#!/usr/bin/env bash
# benches/eval_scaling.sh - does `redline eval --mutate --list` grow with the change, no faster?
#
# Builds synthetic repositories with `git fast-import` (base: one file; head: the change)
# and times `redline eval --mutate REPO --base base --head head --list` on two sizes of
# each shape, side by side, printing wall seconds, peak RSS and the ratio of the larger
# to the smaller (a linear step gives a time ratio near the size ratio):
#   nesting    one added Rust file of N nested `if a == b {` blocks (500 vs 2,000 levels)
#   files      N added two-line Python files (25,000 vs 100,000)
#   flat       one added JavaScript file of N two-statement lines (110 KB vs 440 KB)
#   big        the same at 440 KB vs 1.9 MB: above 512 KiB a file is skipped with its
#              reason (printed), so the larger one costs less than the smaller
#   (set SIZES="SMALL LARGE" to choose the sizes of a single shape)
# Usage:   REDLINE=/path/to/redline benches/eval_scaling.sh [nesting|files|flat]...
# (default: all four; REDLINE defaults to target/release/redline). Numbers, not a test:
# no figure fails it (the counts are tested: src/eval/mutants_tests.rs). Needs python3, git.
set -euo pipefail

redline="${REDLINE:-target/release/redline}"
redline="$(cd "$(dirname "$redline")" && pwd)/$(basename "$redline")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# make_repo DIR SHAPE N: a repository whose `head` adds the change of SHAPE at size N.
make_repo() {
  local dir="$1" shape="$2" n="$3"
  git init -q "$dir"
  python3 - "$shape" "$n" <<'PY' | git -C "$dir" fast-import --quiet
import sys
shape, n = sys.argv[1], int(sys.argv[2])
out = sys.stdout.buffer
def blob(mark, text):
    data = text.encode()
    out.write(b"blob\nmark :%d\ndata %d\n" % (mark, len(data)) + data + b"\n")
def commit(ref, mark, parent, files):
    out.write(b"commit refs/heads/%s\nmark :%d\n" % (ref.encode(), mark))
    out.write(b"committer bench <bench@example.invalid> 1700000000 +0000\ndata 4\nwork\n")
    if parent:
        out.write(b"from :%d\n" % parent)
    for path, m in files:
        out.write(b"M 100644 :%d %s\n" % (m, path.encode()))
    out.write(b"\n")
blob(1, "def keep():\n    return 1\n")
commit("base", 2, None, [("keep.py", 1)])
files = []
if shape == "nesting":
    body = "if a == b {\n" * n
    text = "pub fn f(a: u8, b: u8) {\n" + body + "g(a, b);\n" + "}\n" * n + "}\n"
    blob(3, text)
    files.append(("src/deep.rs", 3))
elif shape == "files":
    blob(3, "def f(a, b):\n    return a == b and g(a, b)\n")
    files = [("pkg%d/m%d.py" % (i // 1000, i), 3) for i in range(n)]
elif shape in ("flat", "big"):
    line = "if (a === b) { return; }\nx = f(x, y) + 1;\n"
    blob(3, "function f(a, b) {\n" + line * n + "}\n")
    files.append(("web/app.js", 3))
commit("head", 4, 2, [("keep.py", 1)] + files)
PY
}

# run SHAPE N: "seconds peak_kib" of one listing.
run() {
  local dir="$work/$1-$2"
  make_repo "$dir" "$1" "$2"
  /usr/bin/time -f "%e %M" -o "$work/time" \
    "$redline" eval --mutate "$dir" --base base --head head --list --mutants 10 >/dev/null 2>"$work/err" ||
    { cat "$work/err" >&2; return 1; }
  cat "$work/time"
  grep -o 'skipped [^;]*' "$work/err" >&2 || true
}

shapes=("$@")
[[ ${#shapes[@]} -eq 0 ]] && shapes=(nesting files flat big)
printf '%-8s %9s %9s %8s %9s %9s %8s %8s\n' shape small large size_x small_s large_s time_x rss_x
for shape in "${shapes[@]}"; do
  case "$shape" in
    nesting) small=500 large=2000 ;;
    files) small=25000 large=100000 ;;
    flat) small=2500 large=10000 ;;
    big) small=10000 large=43000 ;;
    *) echo "unknown shape $shape" >&2; exit 2 ;;
  esac
  [[ -n "${SIZES:-}" ]] && read -r small large <<<"$SIZES"
  read -r s_sec s_kib < <(run "$shape" "$small")
  read -r l_sec l_kib < <(run "$shape" "$large")
  python3 - "$shape" "$small" "$large" "$s_sec" "$l_sec" "$s_kib" "$l_kib" <<'PY'
import sys
shape, small, large = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s, l, sk, lk = (float(x) for x in sys.argv[4:8])
print("%-8s %9d %9d %8.1f %9.2f %9.2f %8.1f %8.1f" % (
    shape, small, large, large / small, s, l, l / max(s, 0.01), lk / max(sk, 1)))
PY
done
