//! `scripts/dist.sh` and `scripts/action-install.sh` against a local release server:
//! a good archive is verified and installed, a wrong checksum is an error (never a
//! fallback), a release or asset that does not exist falls back to `cargo install`.
//! `cargo` is a stand-in script here that records its arguments and "builds" a binary.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The release target of this machine, as the install script maps it.
fn this_target() -> Option<&'static str> {
    match (std::env::consts::OS, std::env::consts::ARCH) {
        ("linux", "x86_64") => Some("x86_64-unknown-linux-gnu"),
        ("linux", "aarch64") => Some("aarch64-unknown-linux-gnu"),
        ("macos", "aarch64") => Some("aarch64-apple-darwin"),
        ("macos", "x86_64") => Some("x86_64-apple-darwin"),
        _ => None,
    }
}

#[derive(Default)]
struct Files {
    files: HashMap<String, (u16, Vec<u8>)>,
    requests: Vec<String>,
}

/// Serves `/download/vVERSION/NAME` from a map; anything else is 404.
struct ReleaseServer {
    base: String,
    state: Arc<Mutex<Files>>,
    task: tokio::task::JoinHandle<()>,
}

impl ReleaseServer {
    async fn start() -> ReleaseServer {
        let state = Arc::new(Mutex::new(Files::default()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = axum::Router::new()
            .fallback(serve_file)
            .with_state(state.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        ReleaseServer {
            base: format!("http://{addr}/download/v{VERSION}"),
            state,
            task,
        }
    }

    fn put(&self, name: &str, status: u16, body: &[u8]) {
        let path = format!("/download/v{VERSION}/{name}");
        self.state
            .lock()
            .unwrap()
            .files
            .insert(path, (status, body.to_vec()));
    }

    fn requests(&self) -> Vec<String> {
        self.state.lock().unwrap().requests.clone()
    }
}

impl Drop for ReleaseServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve_file(State(state): State<Arc<Mutex<Files>>>, uri: Uri) -> Response {
    let mut files = state.lock().unwrap();
    files.requests.push(uri.path().to_string());
    match files.files.get(uri.path()) {
        Some((status, body)) => {
            (StatusCode::from_u16(*status).unwrap(), body.clone()).into_response()
        }
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// A release built by `scripts/dist.sh` around a stand-in binary.
struct Release {
    _dir: tempfile::TempDir,
    archive_name: String,
    archive: Vec<u8>,
    sums: String,
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scripts")
        .join(name)
}

fn write_executable(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn release(target: &str) -> Release {
    let dir = tempfile::tempdir().unwrap();
    let binary = dir.path().join("redline");
    write_executable(
        &binary,
        "#!/bin/sh\necho \"redline from the release archive\"\n",
    );
    let out = dir.path().join("dist");
    let output = std::process::Command::new("bash")
        .arg(script("dist.sh"))
        .arg(target)
        .arg(&out)
        .env("REDLINE_DIST_BINARY", &binary)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "dist.sh: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let archive_name = format!("redline-{VERSION}-{target}.tar.gz");
    let archive = std::fs::read(out.join(&archive_name)).expect("the archive");
    let sums = std::fs::read_to_string(out.join("SHA256SUMS")).expect("SHA256SUMS");
    Release {
        _dir: dir,
        archive_name,
        archive,
        sums,
    }
}

struct Install {
    ok: bool,
    log: String,
    /// What the installed binary prints, if one was installed.
    installed: Option<String>,
    /// The stand-in cargo's arguments, if it ran.
    cargo: Option<String>,
}

async fn install(action_ref: &str, base_url: &str) -> Install {
    install_from(action_ref, base_url, Path::new(env!("CARGO_MANIFEST_DIR"))).await
}

/// The install step of the action checked out at `action_path`.
async fn install_from(action_ref: &str, base_url: &str, action_path: &Path) -> Install {
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools");
    std::fs::create_dir(&tools).unwrap();
    let marker = dir.path().join("cargo-args");
    // `cargo install ... --root DIR ...` "builds" DIR/bin/redline.
    write_executable(
        &tools.join("cargo"),
        &format!(
            "#!/bin/sh\necho \"$*\" > '{}'\nwhile [ $# -gt 0 ]; do if [ \"$1\" = --root ]; then root=\"$2\"; fi; shift; done\nmkdir -p \"$root/bin\"\nprintf '#!/bin/sh\\necho redline built by cargo\\n' > \"$root/bin/redline\"\nchmod +x \"$root/bin/redline\"\n",
            marker.display()
        ),
    );
    let bin_dir = dir.path().join("bin");
    let output = tokio::process::Command::new("bash")
        .arg(script("action-install.sh"))
        .env_clear()
        .env(
            "PATH",
            format!(
                "{}:{}",
                tools.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .env("REDLINE_BIN_DIR", &bin_dir)
        .env("REDLINE_ACTION_REF", action_ref)
        .env(
            "REDLINE_ACTION_REPOSITORY",
            if action_ref.is_empty() {
                ""
            } else {
                "octo/redline"
            },
        )
        .env("REDLINE_RELEASE_BASE_URL", base_url)
        .env("GITHUB_ACTION_PATH", action_path)
        .output()
        .await
        .unwrap();
    let installed = std::process::Command::new(bin_dir.join("redline"))
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    Install {
        ok: output.status.success(),
        log: format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
        installed,
        cargo: std::fs::read_to_string(&marker).ok(),
    }
}

#[tokio::test]
async fn a_good_release_archive_is_verified_and_installed() {
    let Some(target) = this_target() else {
        eprintln!("skipped: no release target for this platform");
        return;
    };
    let release = release(target);
    assert!(
        release
            .sums
            .contains(&format!("  {}\n", release.archive_name)),
        "{}",
        release.sums
    );
    let server = ReleaseServer::start().await;
    server.put("SHA256SUMS", 200, release.sums.as_bytes());
    server.put(&release.archive_name, 200, &release.archive);
    let run = install(&format!("v{VERSION}"), &server.base).await;
    assert!(run.ok, "{}", run.log);
    assert_eq!(
        run.installed.as_deref(),
        Some("redline from the release archive"),
        "{}",
        run.log
    );
    assert!(run.cargo.is_none(), "no build: {:?}", run.cargo);
    assert!(run.log.contains("SHA-256 verified"), "{}", run.log);
    let requests = server.requests();
    assert!(
        requests.iter().any(|p| p.ends_with("/SHA256SUMS")),
        "{requests:?}"
    );
    assert!(
        requests.iter().any(|p| p.ends_with(&release.archive_name)),
        "{requests:?}"
    );
}

#[tokio::test]
async fn the_release_is_found_from_the_action_path_when_the_runner_gives_no_ref() {
    let Some(target) = this_target() else {
        eprintln!("skipped: no release target for this platform");
        return;
    };
    let release = release(target);
    let server = ReleaseServer::start().await;
    server.put("SHA256SUMS", 200, release.sums.as_bytes());
    server.put(&release.archive_name, 200, &release.archive);
    let runner = tempfile::tempdir().unwrap();
    let action_path = runner
        .path()
        .join(format!("_actions/octo/redline/v{VERSION}"));
    std::fs::create_dir_all(&action_path).unwrap();
    let run = install_from("", &server.base, &action_path).await;
    assert!(run.ok, "{}", run.log);
    assert_eq!(
        run.installed.as_deref(),
        Some("redline from the release archive"),
        "{}",
        run.log
    );
    assert!(run.cargo.is_none());
}

#[tokio::test]
async fn a_checksum_mismatch_is_an_error_not_a_fallback() {
    let Some(target) = this_target() else {
        eprintln!("skipped: no release target for this platform");
        return;
    };
    let release = release(target);
    let server = ReleaseServer::start().await;
    server.put("SHA256SUMS", 200, release.sums.as_bytes());
    let mut tampered = release.archive.clone();
    let last = tampered.len() - 1;
    tampered[last] ^= 0xff;
    server.put(&release.archive_name, 200, &tampered);
    let run = install(&format!("v{VERSION}"), &server.base).await;
    assert!(!run.ok, "{}", run.log);
    assert!(run.log.contains("checksum mismatch"), "{}", run.log);
    assert!(run.installed.is_none(), "nothing installed");
    assert!(run.cargo.is_none(), "no fallback build: {:?}", run.cargo);
}

#[tokio::test]
async fn a_missing_release_or_asset_falls_back_to_cargo_install() {
    let Some(target) = this_target() else {
        eprintln!("skipped: no release target for this platform");
        return;
    };
    let release = release(target);
    let other_platform = release.sums.replace(
        &release.archive_name,
        "redline-0.0.0-sparc-sun-solaris.tar.gz",
    );
    // (SHA256SUMS answer, archive answer) of each case.
    let cases: [(Option<&str>, bool); 3] = [
        (None, false),                 // no release for the tag at all
        (Some(&release.sums), false),  // listed, but the asset is missing
        (Some(&other_platform), true), // no asset for this platform
    ];
    for (sums, serve_archive) in cases {
        let server = ReleaseServer::start().await;
        if let Some(sums) = sums {
            server.put("SHA256SUMS", 200, sums.as_bytes());
        }
        if serve_archive {
            server.put(&release.archive_name, 200, &release.archive);
        }
        let run = install(&format!("v{VERSION}"), &server.base).await;
        assert!(run.ok, "{}", run.log);
        let cargo = run.cargo.unwrap_or_default();
        assert!(
            cargo.starts_with("install --locked"),
            "{cargo}\n{}",
            run.log
        );
        assert_eq!(run.installed.as_deref(), Some("redline built by cargo"));
    }
}

#[tokio::test]
async fn a_ref_that_is_not_a_release_tag_builds_without_asking_the_server() {
    let server = ReleaseServer::start().await;
    let run = install("main", &server.base).await;
    assert!(run.ok, "{}", run.log);
    assert!(run.cargo.is_some_and(|c| c.starts_with("install --locked")));
    assert!(server.requests().is_empty(), "{:?}", server.requests());
}

#[tokio::test]
async fn a_server_error_is_an_error_not_a_fallback() {
    let server = ReleaseServer::start().await;
    server.put("SHA256SUMS", 500, b"oops");
    let run = install(&format!("v{VERSION}"), &server.base).await;
    assert!(!run.ok, "{}", run.log);
    assert!(run.log.contains("HTTP 500"), "{}", run.log);
    assert!(run.cargo.is_none(), "no fallback build");
}
