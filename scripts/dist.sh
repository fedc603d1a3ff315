#!/usr/bin/env bash
# Builds redline for one target and packages it for a release:
#
#   scripts/dist.sh TARGET [OUT_DIR]      e.g. scripts/dist.sh x86_64-unknown-linux-gnu
#   scripts/dist.sh --checksums OUT_DIR   only (re)write OUT_DIR/SHA256SUMS
#
# Writes OUT_DIR/redline-VERSION-TARGET.tar.gz (default OUT_DIR: dist/), holding the
# directory redline-VERSION-TARGET/ with the `redline` binary, README.md, the licence
# files, the man pages (man/) and shell completions (completions/), and rewrites OUT_DIR/SHA256SUMS over every redline-*.tar.gz in OUT_DIR
# (`sha256sum` format: "<hex>  <file>"). VERSION is the package version in Cargo.toml.
#
# Environment:
#   REDLINE_REPOSITORY_URL  baked into the binary (SARIF `informationUri`, `redline init`'s
#                           action reference); the release workflow sets it.
#   REDLINE_DIST_BINARY     package this already built binary instead of building (tests,
#                           or a binary built some other way).
# The build is `cargo build --release --locked --target TARGET`; the target's Rust
# standard library must be installed (`rustup target add TARGET`).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  echo "usage: scripts/dist.sh TARGET [OUT_DIR] | scripts/dist.sh --checksums OUT_DIR" >&2
  exit 2
}

sha256() {
  if command -v sha256sum >/dev/null; then sha256sum "$@"; else shasum -a 256 "$@"; fi
}

write_checksums() {
  local dir="$1"
  (
    cd "$dir"
    shopt -s nullglob
    local archives=(redline-*.tar.gz)
    if [ ${#archives[@]} -eq 0 ]; then
      echo "dist: no redline-*.tar.gz in $dir" >&2
      exit 1
    fi
    sha256 "${archives[@]}" > SHA256SUMS.tmp
    mv SHA256SUMS.tmp SHA256SUMS
  )
  echo "dist: wrote $dir/SHA256SUMS"
}

[ $# -ge 1 ] || usage
if [ "$1" = --checksums ]; then
  [ $# -eq 2 ] || usage
  write_checksums "$2"
  exit 0
fi
target="$1"
out_dir="${2:-dist}"
case "$target" in
  *[!A-Za-z0-9_.-]* | "" | -*) echo "dist: not a target triple: $target" >&2; exit 2 ;;
esac

# The [package] version: the first `version = "..."` line of Cargo.toml.
version="$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)"
[ -n "$version" ] || { echo "dist: no version in Cargo.toml" >&2; exit 1; }
name="redline-$version-$target"

if [ -n "${REDLINE_DIST_BINARY:-}" ]; then
  binary="$REDLINE_DIST_BINARY"
else
  cargo build --release --locked --target "$target" --bin redline
  binary="${CARGO_TARGET_DIR:-target}/$target/release/redline"
fi
[ -x "$binary" ] || { echo "dist: no executable at $binary" >&2; exit 1; }

mkdir -p "$out_dir"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir "$stage/$name"
cp "$binary" "$stage/$name/redline"
chmod 755 "$stage/$name/redline"
cp README.md "$stage/$name/"
for licence in LICENSE*; do
  if [ -f "$licence" ]; then cp "$licence" "$stage/$name/"; fi
done
# Man pages (man/redline.1, man/redline-review.1, ...) and shell completions
# (completions/), written by the binary itself; by a host build of it when the target's
# binary cannot run here (a cross build).
generator="$binary"
if ! "$generator" --version >/dev/null 2>&1; then
  cargo build --release --locked --bin redline
  generator="${CARGO_TARGET_DIR:-target}/release/redline"
fi
mkdir "$stage/$name/man" "$stage/$name/completions"
"$generator" man "$stage/$name/man"
"$generator" completions bash > "$stage/$name/completions/redline.bash"
"$generator" completions zsh > "$stage/$name/completions/_redline"
"$generator" completions fish > "$stage/$name/completions/redline.fish"
"$generator" completions powershell > "$stage/$name/completions/_redline.ps1"
tar -C "$stage" -czf "$out_dir/$name.tar.gz" "$name"
echo "dist: wrote $out_dir/$name.tar.gz"
write_checksums "$out_dir"
