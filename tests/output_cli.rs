//! What people read on a terminal: findings as compiler diagnostics with their code,
//! `--color` and `NO_COLOR`, progress lines, shell completions, man pages and `--help`.

use serde_json::json;

use crate::common::cli::{KEY, redline_command};
use crate::common::git::TempRepo;
use crate::common::model_server::{ModelServer, Reply, Wire};

const HEAD_CALC: &str = "pub fn average(values: &[i32]) -> i32 {\n    values.iter().sum::<i32>() / values.len() as i32\n}\n\npub fn ratio(a: i32, b: i32) -> i32 {\n    a / b\n}\n";

/// A repository whose `feature` branch adds `ratio` (a division by zero at src/calc.rs:6).
fn repo() -> TempRepo {
    let repo = TempRepo::new();
    repo.write("src/calc.rs", "pub fn average() {}\n");
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write("src/calc.rs", HEAD_CALC);
    repo.commit("add ratio");
    repo
}

struct Output {
    code: i32,
    stdout: String,
    stderr: String,
}

/// `redline review` of [`repo`] against a model that reads a file, then reports the
/// division with a suggestion; `env` is added to the clean environment.
async fn review(extra: &[&str], env: &[(&str, &str)]) -> Output {
    let repo = repo();
    let finding = json!({"path": "src/calc.rs", "line": 6, "severity": "critical", "category": "bug",
        "title": "Division by zero when b is 0", "body": "`ratio` divides by `b` without checking it.",
        "suggestion": "    a.checked_div(b).unwrap_or(0)"});
    let server = ModelServer::start(
        Wire::OpenAi,
        vec![
            Reply::tools(vec![("c1", "read_file", json!({"path": "src/calc.rs"}))]),
            Reply::tool(
                "c2",
                "submit_review",
                json!({"findings": [finding], "summary": "Adds ratio."}),
            ),
        ],
    )
    .await;
    let output = redline_command()
        .args(["review", "--repo", &repo.path().display().to_string()])
        .args(["--base", "main", "--base-url", &server.base_url()])
        .args(["--model", "test-model", "--no-transcript"])
        .args(extra)
        .envs(env.iter().copied())
        .env("REDLINE_API_KEY", KEY)
        .output()
        .await
        .expect("run redline");
    Output {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

async fn redline(args: &[&str]) -> Output {
    let output = redline_command()
        .args(args)
        .output()
        .await
        .expect("run redline");
    Output {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

#[tokio::test]
async fn a_finding_is_shown_with_its_code_and_suggested_change() {
    let run = review(&[], &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let expected = "\
critical[bug]: Division by zero when b is 0
 --> src/calc.rs:6:5
  |
5 | pub fn ratio(a: i32, b: i32) -> i32 {
6 |     a / b
  |     ^^^^^
7 | }
  |
  = `ratio` divides by `b` without checking it.
help: suggested change
  |
6 -     a / b
6 +     a.checked_div(b).unwrap_or(0)
  |
";
    assert!(run.stdout.starts_with(expected), "{}", run.stdout);
    // Piped, and not asked for: no colour.
    assert!(!run.stdout.contains('\x1b'), "{}", run.stdout);
}

#[tokio::test]
async fn colour_follows_the_color_flag_and_no_color() {
    let coloured = |run: &Output| {
        assert_eq!(run.code, 0, "{}", run.stderr);
        run.stdout.contains("\x1b[")
    };
    assert!(coloured(&review(&["--color", "always"], &[]).await));
    assert!(!coloured(&review(&["--color", "never"], &[]).await));
    // `auto` colours what would be a terminal (CLICOLOR_FORCE stands in for one here) ...
    assert!(coloured(&review(&[], &[("CLICOLOR_FORCE", "1")]).await));
    // ... unless NO_COLOR is set; an explicit --color always still wins.
    let no_color = [("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")];
    assert!(!coloured(&review(&[], &no_color).await));
    assert!(coloured(&review(&["--color", "always"], &no_color).await));
    // JSON is never coloured.
    let json = review(&["--format", "json", "--color", "always"], &[]).await;
    assert!(!json.stdout.contains('\x1b'), "{}", json.stdout);
    let bad = redline(&["review", "--color", "sometimes"]).await;
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(bad.stderr.contains("--color"), "{}", bad.stderr);
}

#[tokio::test]
async fn progress_is_one_line_per_step_without_raw_json() {
    let run = review(&["--format", "json"], &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let steps: Vec<&str> = run
        .stderr
        .lines()
        .filter(|line| line.contains("] step ") || line.contains("] verifier step "))
        .collect();
    // Two review steps, then the verifier's one step after it says what it verifies.
    assert_eq!(steps.len(), 3, "{}", run.stderr);
    assert!(
        steps[2].contains("verifier step 1: model replied (model "),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("] verifying 1 finding ("),
        "{}",
        run.stderr
    );
    assert!(
        steps[0].contains("step 1: read_file src/calc.rs (model "),
        "{}",
        run.stderr
    );
    assert!(
        steps[1].contains("step 2: submit_review (1 finding) (model "),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("{\""), "{}", run.stderr);
    // Redirected stderr gets plain lines: no spinner, no escape codes.
    assert!(!run.stderr.contains('\x1b'), "{}", run.stderr);
}

#[tokio::test]
async fn completions_are_printed_for_each_shell() {
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let run = redline(&["completions", shell]).await;
        assert_eq!(run.code, 0, "{shell}: {}", run.stderr);
        assert!(
            run.stdout.len() > 200 && run.stdout.contains("review"),
            "{shell}: {}",
            run.stdout
        );
    }
    let bad = redline(&["completions", "tcsh"]).await;
    assert_eq!(bad.code, 2, "{}", bad.stderr);
}

/// Bash completes the values of `--format`, `--strategy`, `--fail-on` and `--tool-mode`
/// from their lists, not with file names, and never offers the hidden `man`.
#[tokio::test]
async fn bash_completes_flag_values_from_their_lists_and_hides_man() {
    let run = redline(&["completions", "bash"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let script = run.stdout;
    for choices in [
        "text markdown json sarif",
        "auto react plan reflect",
        "critical major minor nit never",
        "native text auto",
    ] {
        assert!(
            script.contains(&format!("compgen -W \"{choices}\"")),
            "{choices} is not offered"
        );
    }
    let review = script
        .split("redline__subcmd__review)")
        .nth(1)
        .or_else(|| script.split("redline__review)").nth(1))
        .expect("the review section");
    let format = review.split("--format)").nth(1).expect("--format");
    let format = format.split(";;").next().unwrap_or_default();
    assert!(
        format.contains("compgen -W") && !format.contains("compgen -f"),
        "{format}"
    );
    assert!(!script.contains("__man"), "man is offered");
    let top = script
        .lines()
        .find(|l| l.contains("opts=") && l.contains("review") && l.contains("context"))
        .expect("the subcommand list");
    assert!(!top.split_whitespace().any(|w| w == "man"), "{top}");
}

#[tokio::test]
async fn man_pages_are_written_for_the_command_and_each_subcommand() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("man");
    let run = redline(&["man", &out.display().to_string()]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let page = std::fs::read_to_string(out.join("redline.1")).expect("redline.1");
    assert!(page.contains(".TH redline 1"), "{page}");
    let review = std::fs::read_to_string(out.join("redline-review.1")).expect("redline-review.1");
    assert!(review.contains("\\-\\-color"), "{review}");
    assert!(
        !out.join("redline-man.1").exists(),
        "the man command itself is hidden"
    );
}

#[tokio::test]
async fn review_help_is_grouped_with_defaults_and_variables() {
    let run = redline(&["review", "--help"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let help = run.stdout;
    for heading in ["Model:", "Output:", "Limits:", "Transcripts:"] {
        assert!(
            help.contains(&format!("\n{heading}\n")),
            "{heading}: {help}"
        );
    }
    let model = help.find("\nModel:\n").unwrap_or_default();
    let output = help.find("\nOutput:\n").unwrap_or_default();
    assert!(
        help[model..].contains("--base-url") && help[output..].contains("--format"),
        "{help}"
    );
    for shown in [
        "[default: text]",
        "[default: auto]",
        "[env: REDLINE_MODEL=]",
        "REDLINE_API_KEY",
        "NO_COLOR",
    ] {
        assert!(help.contains(shown), "{shown}: {help}");
    }
}

/// A reader that closes the pipe (`redline runs | head -5`, `config schema | true`) ends
/// the command quietly: exit 0, nothing on stderr, no panic.
#[cfg(unix)]
#[tokio::test]
async fn writing_into_a_closed_pipe_ends_quietly() {
    use std::os::fd::{FromRawFd, OwnedFd};
    for args in [&["config", "schema"][..], &["completions", "bash"][..]] {
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors pipe(2) writes.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: both descriptors were just opened by pipe(2) and are owned here only.
        let (reader, writer) =
            unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        drop(reader);
        let output = redline_command()
            .args(args)
            .stdout(std::process::Stdio::from(writer))
            .output()
            .await
            .expect("run redline");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(stderr.is_empty(), "{args:?}: {stderr}");
    }
}
