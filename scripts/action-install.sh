#!/usr/bin/env bash
# Installs the redline binary for the composite action into $REDLINE_BIN_DIR,
# unless the cache step already restored it.
set -euo pipefail
bin_dir="${REDLINE_BIN_DIR:?REDLINE_BIN_DIR is not set}"
if [ -x "$bin_dir/redline" ]; then
  echo "redline restored from cache: $("$bin_dir/redline" --version)"
  exit 0
fi
if ! command -v cargo >/dev/null; then
  echo "::error::Redline needs a Rust toolchain to build (cargo not found); add a setup step such as dtolnay/rust-toolchain@stable"
  exit 1
fi
build_root="$(mktemp -d)"
cargo install --locked --root "$build_root" --path "${GITHUB_ACTION_PATH:?}" --bin redline
mkdir -p "$bin_dir"
mv "$build_root/bin/redline" "$bin_dir/redline"
rm -rf "$build_root"
"$bin_dir/redline" --version
