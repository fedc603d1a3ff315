# benches/corpus.sh - shared by the corpus benchmarks (sourced, not run).
#
# Needs $work (a scratch directory). Crates come from the package registry
# through cargo only (cargo caches them after the first run).

# fetch NAME VERSION -> prints the directory holding that crate's published source
fetch() {
  local name="$1" version="$2"
  local project="$work/fetch-$name-$version"
  mkdir -p "$project/src"
  : > "$project/src/lib.rs"
  cat > "$project/Cargo.toml" <<TOML
[package]
name = "fetch-corpus"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
$name = { version = "=$version", default-features = false }
TOML
  (cd "$project" && cargo vendor --quiet --versioned-dirs vendor > /dev/null)
  echo "$project/vendor/$name-$version"
}

# commit_tree REPO SOURCE TAG: replace the repository's content with SOURCE and tag the commit
commit_tree() {
  local repo="$1" source="$2" tag="$3"
  git -C "$repo" rm -rq --ignore-unmatch . > /dev/null
  cp -R "$source/." "$repo/"
  rm -f "$repo/.cargo-checksum.json" "$repo/.cargo_vcs_info.json"
  git -C "$repo" add -A
  git -C "$repo" -c user.name=bench -c user.email=bench@localhost commit -qm "$tag" --allow-empty
  git -C "$repo" tag "$tag"
}

# release_change NAME OLD NEW -> prints a new repository whose tags `base` and
# `head` hold the two published versions (fails when either cannot be fetched)
release_change() {
  local name="$1" old="$2" new="$3" a b
  a="$(fetch "$name" "$old")" && b="$(fetch "$name" "$new")" || return 1
  local repo="$work/repo-$name-$old-$new"
  git init -q "$repo"
  commit_tree "$repo" "$a" base
  commit_tree "$repo" "$b" head
  echo "$repo"
}
