//! What a release ships besides the binary's code: both licences Cargo.toml names, a
//! build with no system OpenSSL (so `cargo install` needs only a Rust toolchain and a C
//! compiler), the GitLab component's image pinned to its release, and a `compose.yaml`
//! for either forge.

use std::path::{Path, PathBuf};

use regex::Regex;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// No package of the build (on any platform: Cargo.lock holds them all) is OpenSSL's: its
/// `-sys` crate needs the system's headers and pkg-config, which a bare machine lacks.
/// git2's `https` feature brought it; Redline's own HTTP transport replaces it.
#[test]
fn nothing_in_the_build_needs_the_system_openssl() {
    let lock = read(&root().join("Cargo.lock"));
    for name in [
        "openssl-sys",
        "openssl",
        "native-tls",
        "libssh2-sys",
        "curl-sys",
    ] {
        assert!(
            !lock.contains(&format!("name = \"{name}\"\n")),
            "Cargo.lock has {name}: `cargo tree -i {name}` shows who brings it"
        );
    }
    let manifest = read(&root().join("Cargo.toml"));
    let git2 = manifest
        .lines()
        .find(|l| l.starts_with("git2 = "))
        .expect("git2 in Cargo.toml");
    assert!(!git2.contains("https") && !git2.contains("ssh"), "{git2}");
}

/// Cargo.toml says "MIT OR Apache-2.0": both licence texts are in the repository, with
/// Redline's copyright line, and the README links them.
#[test]
fn both_licences_of_cargo_toml_are_in_the_repository() {
    assert_eq!(env!("CARGO_PKG_LICENSE"), "MIT OR Apache-2.0");
    let mit = read(&root().join("LICENSE-MIT"));
    assert!(mit.contains("Copyright (c) The Redline authors"), "{mit}");
    assert!(mit.contains("Permission is hereby granted, free of charge"));
    let apache = read(&root().join("LICENSE-APACHE"));
    assert!(apache.contains("Apache License") && apache.contains("Version 2.0, January 2004"));
    assert!(apache.contains("END OF TERMS AND CONDITIONS"));
    let readme = read(&root().join("README.md"));
    assert!(
        readme.contains("(LICENSE-MIT)") && readme.contains("(LICENSE-APACHE)"),
        "the README links the licences"
    );
}

/// The GitLab CI/CD component runs the image of its own release: included at a version, it
/// never takes whatever `:latest` is.
#[test]
fn the_gitlab_component_runs_the_image_of_its_own_version() {
    let template = read(&root().join("templates/redline.yml"));
    assert!(!template.contains(":latest"), "{template}");
    let image = Regex::new(r"(?m)^\s+default: (ghcr\.io/\S+)$")
        .expect("a valid regex")
        .captures(&template)
        .map(|c| c[1].to_string())
        .expect("the image input's default");
    let path = env!("CARGO_PKG_REPOSITORY")
        .strip_prefix("https://github.com/")
        .expect("a github.com repository");
    assert_eq!(
        image,
        format!("ghcr.io/{path}:v{}", env!("CARGO_PKG_VERSION"))
    );
}

/// `compose.yaml` serves either forge or both: it requires no forge's variables (an unset
/// one is passed as empty, which counts as unset) and passes GitLab's as well as GitHub's.
#[test]
fn compose_serves_either_forge_or_both() {
    let compose = read(&root().join("compose.yaml"));
    assert!(!compose.contains(":?"), "a variable is required: {compose}");
    for var in [
        "GITHUB_APP_ID",
        "GITHUB_APP_PRIVATE_KEY",
        "GITHUB_WEBHOOK_SECRET",
        "GITLAB_API_URL",
        "GITLAB_TOKEN",
        "GITLAB_WEBHOOK_SECRET",
    ] {
        assert!(
            compose.contains(&format!("      {var}: ${{{var}:-}}\n")),
            "{var} is not passed as optional: {compose}"
        );
    }
}

/// Every input the GitLab component declares reaches `redline gitlab`: each is used in the
/// job, and each `REDLINE_*` variable the job sets is one the command reads (an input
/// passed under a misspelt name would be silently ignored).
#[test]
fn every_gitlab_component_input_reaches_the_command() {
    let template = read(&root().join("templates/redline.yml"));
    let (spec, job) = template
        .split_once("\n---\n")
        .expect("a spec section and a job section");
    let declared: Vec<String> = Regex::new(r"(?m)^    ([a-z][a-z-]*):\s*$")
        .expect("a valid regex")
        .captures_iter(spec)
        .map(|c| c[1].to_string())
        .collect();
    assert!(
        declared.contains(&"verify".to_string()) && declared.contains(&"verify-model".to_string()),
        "{declared:?}"
    );
    for input in &declared {
        assert!(
            job.contains(&format!("$[[ inputs.{input} ]]")),
            "input `{input}` is declared but never used: {job}"
        );
    }
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_redline"))
        .args(["gitlab", "--help"])
        .env_clear()
        .output()
        .expect("redline gitlab --help runs");
    let help = String::from_utf8_lossy(&help.stdout);
    let variables: Vec<String> = Regex::new(r"(?m)^    (REDLINE_[A-Z_]+):")
        .expect("a valid regex")
        .captures_iter(job)
        .map(|c| c[1].to_string())
        .collect();
    assert!(variables.len() >= 5, "{variables:?}");
    for variable in variables {
        assert!(
            help.contains(&format!("[env: {variable}=")),
            "the job sets {variable}, which `redline gitlab` does not read: {help}"
        );
    }
}
