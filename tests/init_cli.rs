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

#[tokio::test]
async fn init_writes_the_config_at_the_repository_root_and_says_what_next() {
    let repo = TempRepo::new();
    repo.write("src/lib.rs", "pub fn f() {}\n");
    let run = init(&repo.path().join("src"), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let config = std::fs::read_to_string(repo.path().join(".redline.toml")).expect("config");
    assert!(config.contains("# model = \"gpt-4.1-mini\""), "{config}");
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
    assert!(
        uses[1].ends_with(&format!("@v{}", env!("CARGO_PKG_VERSION"))),
        "a release of the action: {}",
        uses[1]
    );
    assert!(dir.path().join(".redline.toml").is_file());
    assert!(run.stdout.contains("OPENAI_API_KEY"), "{}", run.stdout);
}

#[tokio::test]
async fn init_never_overwrites_without_force_and_writes_nothing_then() {
    let dir = tempfile::tempdir().expect("tmp");
    let config = dir.path().join(".redline.toml");
    std::fs::write(&config, "model = \"mine\"\n").expect("write");
    let run = init(dir.path(), &["--action"]).await;
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(
        run.stderr.contains(".redline.toml") && run.stderr.contains("--force"),
        "{}",
        run.stderr
    );
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        "model = \"mine\"\n"
    );
    assert!(
        !dir.path().join(".github/workflows/redline.yml").exists(),
        "nothing is written when any file exists"
    );

    let run = init(dir.path(), &["--action", "--force"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        std::fs::read_to_string(&config)
            .unwrap()
            .contains("# model = ")
    );
    assert!(dir.path().join(".github/workflows/redline.yml").is_file());
}
