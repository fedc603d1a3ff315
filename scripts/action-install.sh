#!/usr/bin/env bash
# Installs the redline binary for the composite action into $REDLINE_BIN_DIR, unless the
# cache step already restored it.
#
# 1. The release matching the action's ref (a `v*` tag in REDLINE_ACTION_REF) or the input
#    `version` (REDLINE_VERSION): downloads redline-VERSION-TARGET.tar.gz and SHA256SUMS
#    from the release of REDLINE_ACTION_REPOSITORY (or from REDLINE_RELEASE_BASE_URL,
#    the directory holding both, when set) and checks the archive against SHA256SUMS.
#    A checksum mismatch or a failed download is an error: never a silent fallback.
# 2. `cargo install --locked` from the action's own checkout, only when there is no
#    release for the ref (not a tag, no SHA256SUMS) or none for this platform (no line
#    in SHA256SUMS, or the archive is not there).
set -euo pipefail
bin_dir="${REDLINE_BIN_DIR:?REDLINE_BIN_DIR is not set}"
if [ -x "$bin_dir/redline" ]; then
  echo "redline restored from cache: $("$bin_dir/redline" --version)"
  exit 0
fi

sha256() {
  if command -v sha256sum >/dev/null; then sha256sum "$1"; else shasum -a 256 "$1"; fi
}

# The release asset's target for this runner, empty when none is built for it.
platform_target() {
  case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) echo x86_64-unknown-linux-gnu ;;
    Linux-aarch64 | Linux-arm64) echo aarch64-unknown-linux-gnu ;;
    Darwin-arm64 | Darwin-aarch64) echo aarch64-apple-darwin ;;
    Darwin-x86_64) echo x86_64-apple-darwin ;;
    *) echo "" ;;
  esac
}

# GETs $1 into $2; prints the HTTP status (000 when there was no answer).
fetch() {
  local code
  code="$(curl --silent --show-error --location --retry 3 --retry-delay 2 --connect-timeout 20 \
    --output "$2" --write-out '%{http_code}' "$1")" || true
  echo "${code:-000}"
}

build_with_cargo() {
  echo "$1; building redline with cargo install --locked"
  if ! command -v cargo >/dev/null; then
    echo "::error::Redline needs a Rust toolchain to build (cargo not found); add a setup step such as dtolnay/rust-toolchain@stable, or use a release tag of the action"
    exit 1
  fi
  local build_root
  build_root="$(mktemp -d)"
  cargo install --locked --root "$build_root" --path "${GITHUB_ACTION_PATH:?}" --bin redline
  mkdir -p "$bin_dir"
  mv "$build_root/bin/redline" "$bin_dir/redline"
  rm -rf "$build_root"
  "$bin_dir/redline" --version
  exit 0
}

# Downloads, verifies and installs the release archive; falls back to cargo only when
# the release or this platform's asset does not exist.
install_release() {
  local version="$1" target="$2" base="$3"
  local archive="redline-$version-$target.tar.gz"
  local work status expected actual
  work="$(mktemp -d)"
  # Expanded now: `work` is local and gone when the trap runs.
  # shellcheck disable=SC2064
  trap "rm -rf '$work'" EXIT
  status="$(fetch "$base/SHA256SUMS" "$work/SHA256SUMS")"
  case "$status" in
    200) ;;
    404) build_with_cargo "no release v$version (no SHA256SUMS at $base)" ;;
    *) echo "::error::Redline: downloading $base/SHA256SUMS failed (HTTP $status)"; exit 1 ;;
  esac
  expected="$(awk -v name="$archive" '$2 == name || $2 == "*" name { print $1; exit }' "$work/SHA256SUMS")"
  if [ -z "$expected" ]; then
    build_with_cargo "release v$version has no $archive in SHA256SUMS"
  fi
  status="$(fetch "$base/$archive" "$work/$archive")"
  case "$status" in
    200) ;;
    404) build_with_cargo "release v$version has no $archive" ;;
    *) echo "::error::Redline: downloading $base/$archive failed (HTTP $status)"; exit 1 ;;
  esac
  actual="$(sha256 "$work/$archive" | awk '{ print $1 }')"
  if [ "$actual" != "$expected" ]; then
    echo "::error::Redline: checksum mismatch for $archive: SHA256SUMS says $expected, the download is $actual; not installing it"
    exit 1
  fi
  tar -xzf "$work/$archive" -C "$work"
  mkdir -p "$bin_dir"
  mv "$work/redline-$version-$target/redline" "$bin_dir/redline"
  chmod 755 "$bin_dir/redline"
  echo "redline $version installed from $archive (SHA-256 verified): $("$bin_dir/redline" --version)"
}

# The runner may leave github.action_ref / action_repository empty in composite actions
# (actions/runner#2473); a remote action's checkout is at .../_actions/OWNER/REPO/REF.
if [ -z "${REDLINE_ACTION_REF:-}" ] || [ -z "${REDLINE_ACTION_REPOSITORY:-}" ]; then
  case "${GITHUB_ACTION_PATH:-}" in
    */_actions/*/*/*)
      rest="${GITHUB_ACTION_PATH##*/_actions/}"
      IFS=/ read -r owner repo ref _ <<< "$rest"
      REDLINE_ACTION_REPOSITORY="${REDLINE_ACTION_REPOSITORY:-$owner/$repo}"
      REDLINE_ACTION_REF="${REDLINE_ACTION_REF:-$ref}"
      ;;
  esac
fi

version="${REDLINE_VERSION:-}"
version="${version#v}"
if [ -z "$version" ]; then
  case "${REDLINE_ACTION_REF:-}" in
    v[0-9]*) version="${REDLINE_ACTION_REF#v}" ;;
  esac
fi
if [ -z "$version" ]; then
  build_with_cargo "the action's ref (${REDLINE_ACTION_REF:-none}) is not a release tag and no version input is set"
fi
case "$version" in
  *[!A-Za-z0-9.+-]*) echo "::error::Redline: version '$version' is not a version number"; exit 1 ;;
esac
target="$(platform_target)"
if [ -z "$target" ]; then
  build_with_cargo "no release build for $(uname -s) $(uname -m)"
fi
base="${REDLINE_RELEASE_BASE_URL:-}"
if [ -z "$base" ]; then
  if [ -z "${REDLINE_ACTION_REPOSITORY:-}" ]; then
    build_with_cargo "the action is not used from a repository (local path), so there is no release to download"
  fi
  base="${GITHUB_SERVER_URL:-https://github.com}/$REDLINE_ACTION_REPOSITORY/releases/download/v$version"
fi
install_release "$version" "$target" "${base%/}"
