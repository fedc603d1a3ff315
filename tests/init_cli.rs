//! `redline init`: the files it writes, where, and that it never overwrites without `--force`.

use std::path::Path;

use crate::common::cli::redline_command;
use crate::common::git::TempRepo;

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

async fn init(dir: &Path, args: &[&str]) -> Run {
    let output = redline_command()
        .arg("init")
        .args(args)
        .current_dir(dir)
        .output()
        .await
        .expect("run redline init");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// `owner/name` of the repository Redline is published from: Cargo.toml's `repository`,
/// unless the build was given another GitHub repository (`REDLINE_REPOSITORY_URL`).
fn published_repository() -> String {
    let github = |url: &'static str| url.strip_prefix("https://github.com/");
    option_env!("REDLINE_REPOSITORY_URL")
        .and_then(github)
        .or_else(|| github(env!("CARGO_PKG_REPOSITORY")))
        .expect("Cargo.toml's repository is on github.com")
        .trim_end_matches('/')
        .trim_end_matches(".git")
        .to_string()
}

#[tokio::test]
async fn init_writes_the_config_at_the_repository_root_and_says_what_next() {
    let repo = TempRepo::new();
    repo.write("src/lib.rs", "pub fn f() {}\n");
    let run = init(&repo.path().join("src"), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let config = std::fs::read_to_string(repo.path().join(".redline.toml")).expect("config");
    assert!(config.contains("# model = \"gpt-4.1-mini\""), "{config}");
    let schema = config.lines().next().unwrap_or_default();
    assert_eq!(
        schema,
        format!(
            "#:schema https://raw.githubusercontent.com/{}/v{}/docs/redline.schema.json",
            published_repository(),
            env!("CARGO_PKG_VERSION")
        )
    );
    assert!(
        !repo.path().join("src/.redline.toml").exists(),
        "written at the root, not the current directory"
    );
    assert!(
        !repo.path().join(".github").exists(),
        "no workflow without --action"
    );
    assert!(run.stdout.contains("Next steps:"), "{}", run.stdout);
    assert!(
        run.stdout.contains("redline init --action"),
        "{}",
        run.stdout
    );
    assert!(
        !run.stderr.contains("not in a git repository"),
        "{}",
        run.stderr
    );
}

/// Outside a repository the file is still written where `init` runs, but it says so:
/// Redline reads the file at a repository's root.
#[tokio::test]
async fn init_outside_a_repository_says_where_it_writes() {
    let dir = tempfile::tempdir().expect("tmp");
    let run = init(dir.path(), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(dir.path().join(".redline.toml").is_file());
    assert!(
        run.stderr.contains("is not in a git repository") && run.stderr.contains("--repo"),
        "{}",
        run.stderr
    );
}

#[tokio::test]
async fn init_action_writes_the_workflow_and_names_the_secret() {
    let dir = tempfile::tempdir().expect("tmp");
    let run = init(dir.path(), &["--action"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let workflow = std::fs::read_to_string(dir.path().join(".github/workflows/redline.yml"))
        .expect("workflow");
    assert!(
        workflow.contains("api-key: ${{ secrets.OPENAI_API_KEY }}"),
        "{workflow}"
    );
    assert!(workflow.contains("pull-requests: write"), "{workflow}");
    // The issues a pull request closes are part of what the model is told it is for.
    assert!(workflow.contains("issues: read"), "{workflow}");
    let uses = workflow
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- uses: "))
        .collect::<Vec<_>>();
    assert_eq!(uses.len(), 2, "{workflow}");
    assert_eq!(
        uses[1],
        format!("{}@v{}", published_repository(), env!("CARGO_PKG_VERSION")),
        "this release of the action"
    );
    assert!(dir.path().join(".redline.toml").is_file());
    assert!(run.stdout.contains("OPENAI_API_KEY"), "{}", run.stdout);
}

#[tokio::test]
async fn init_never_overwrites_without_force_and_adds_only_what_is_missing() {
    let dir = tempfile::tempdir().expect("tmp");
    let config = dir.path().join(".redline.toml");
    std::fs::write(&config, "model = \"mine\"\n").expect("write");
    // `init` then `init --action`, as init's own advice says: the workflow is added.
    let run = init(dir.path(), &["--action"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("kept "), "{}", run.stdout);
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        "model = \"mine\"\n"
    );
    let workflow = dir.path().join(".github/workflows/redline.yml");
    assert!(workflow.is_file());
    std::fs::write(&workflow, "# mine\n").expect("write");

    // Everything exists: nothing is written, and that is an error naming --force.
    let run = init(dir.path(), &["--action"]).await;
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(
        run.stderr.contains(".redline.toml") && run.stderr.contains("--force"),
        "{}",
        run.stderr
    );
    assert_eq!(std::fs::read_to_string(&workflow).unwrap(), "# mine\n");
    let run = init(dir.path(), &[]).await;
    assert_eq!(run.code, 2, "{}", run.stdout);

    let run = init(dir.path(), &["--action", "--force"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        std::fs::read_to_string(&config)
            .unwrap()
            .contains("# model = ")
    );
    assert!(
        std::fs::read_to_string(&workflow)
            .unwrap()
            .contains("uses:")
    );
}

/// A repository (as a clone could carry it) with `link` pointing at `target`.
#[cfg(unix)]
fn with_link(link: &str, target: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tmp");
    let link = dir.path().join(link);
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(target, &link).unwrap();
    dir
}

#[cfg(unix)]
#[tokio::test]
async fn init_refuses_every_path_that_leads_outside_the_repository() {
    let outside = tempfile::tempdir().expect("tmp");
    let victim = outside.path().join("victim.yml");
    std::fs::write(&victim, "mine\n").unwrap();
    let cases = [
        (".redline.toml", victim.clone()),
        (".github", outside.path().to_path_buf()),
        (".github/workflows", outside.path().to_path_buf()),
        (".github/workflows/redline.yml", victim.clone()),
    ];
    for (link, target) in cases {
        let dir = with_link(link, &target);
        let run = init(dir.path(), &["--action", "--force"]).await;
        assert_eq!(run.code, 2, "{link}: {}", run.stdout);
        assert!(run.stderr.contains(link), "{link}: {}", run.stderr);
        assert_eq!(
            std::fs::read_to_string(&victim).unwrap(),
            "mine\n",
            "{link}"
        );
        let written: Vec<_> = std::fs::read_dir(outside.path()).unwrap().collect();
        assert_eq!(written.len(), 1, "{link}: nothing new outside");
        if link != ".redline.toml" {
            assert!(
                !dir.path().join(".redline.toml").exists(),
                "{link}: nothing written"
            );
        }
    }
    // A link that stays inside the repository is fine.
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::create_dir(dir.path().join("ci")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("ci"), dir.path().join(".github")).unwrap();
    let run = init(dir.path(), &["--action"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(dir.path().join("ci/workflows/redline.yml").is_file());
}

#[cfg(unix)]
#[tokio::test]
async fn init_force_refuses_a_fifo_instead_of_waiting_on_it() {
    let dir = tempfile::tempdir().expect("tmp");
    let fifo = std::ffi::CString::new(
        dir.path()
            .join(".redline.toml")
            .to_str()
            .expect("utf-8")
            .to_string(),
    )
    .unwrap();
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    let output = redline_command()
        .args(["init", "--force"])
        .current_dir(dir.path())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(std::time::Duration::from_secs(60), output)
        .await
        .expect("init returns")
        .expect("run redline init");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(".redline.toml") && stderr.contains("not a regular file"),
        "{stderr}"
    );
}
