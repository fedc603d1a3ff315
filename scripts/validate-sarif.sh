#!/usr/bin/env bash
# Validates Redline's SARIF with Microsoft's SARIF Multitool, rule kinds "Sarif;Gh" (the
# SARIF specification plus GitHub code scanning's ingestion rules).
#
#   scripts/validate-sarif.sh [FILE.sarif ...]
#
# Without files it validates the SARIF of a sample review with one finding per category
# (`cargo run --example sarif_sample`). Fails on any error and on any warning except
# SARIF2017 (a result without a region: findings on removed lines point at the base
# version of a file, which has no region in the head). The validator is installed with
# npm into $REDLINE_TOOLS_DIR (default ~/.cache/redline-tools) on first use; without npm
# the script says it skipped and exits 0, or 1 when REDLINE_REQUIRE_SARIF_VALIDATOR=1.
set -euo pipefail
cd "$(dirname "$0")/.."

version=5.7.0
tools="${REDLINE_TOOLS_DIR:-$HOME/.cache/redline-tools}/sarif-multitool-$version"
multitool="$tools/node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool"

skip() {
  echo "validate-sarif: skipped: $1"
  if [ "${REDLINE_REQUIRE_SARIF_VALIDATOR:-}" = 1 ]; then exit 1; fi
  exit 0
}

if [ ! -x "$multitool" ]; then
  command -v npm >/dev/null || skip "npm not found"
  [ "$(uname -s)" = Linux ] || skip "the npm package is built for Linux only"
  mkdir -p "$tools"
  npm install --prefix "$tools" --no-audit --no-fund --silent \
    "@microsoft/sarif-multitool-linux@$version" || skip "npm could not install the validator"
  # npm may not run the package's postinstall script, which only sets this bit.
  chmod u+x "$multitool"
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
files=("$@")
if [ ${#files[@]} -eq 0 ]; then
  # The sample carries `informationUri`: Cargo.toml's `repository`, as every build does.
  cargo run --quiet --example sarif_sample > "$work/sample.sarif"
  files=("$work/sample.sarif")
fi

status=0
for file in "${files[@]}"; do
  out="$work/$(basename "$file").validation.sarif"
  "$multitool" validate "$file" -o "$out" --rule-kind "Sarif;Gh" > "$work/log.txt" 2>&1 || true
  if [ ! -s "$out" ]; then
    # The validator itself did not run here (a .NET runtime problem, say): that says
    # nothing about the SARIF, whose structure the Rust tests check too.
    cat "$work/log.txt"
    skip "the validator wrote no report for $file"
  fi
  # Results without `level` are warnings (SARIF's default).
  if ! node -e '
    const log = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    const allowed = new Set(["SARIF2017"]);
    let bad = 0;
    for (const run of log.runs) for (const r of run.results || []) {
      const level = r.level || "warning";
      if (level === "error" || (level === "warning" && !allowed.has(r.ruleId))) {
        bad++;
        console.log(`${level} ${r.ruleId}: ${r.message.text || (r.message.arguments || []).join(" ")}`);
      }
    }
    process.exit(bad ? 1 : 0);
  ' "$out"; then
    echo "validate-sarif: $file: FAILED"
    status=1
  else
    echo "validate-sarif: $file: valid (Sarif;Gh)"
  fi
done
exit "$status"
