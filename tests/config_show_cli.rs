//! `redline config show` and `redline config schema` end to end: the settings a review
//! would use, each with its origin (flag, environment, the repository's file at the base
//! with its line, the user's file, default), the key never printed, no key needed.

use std::path::Path;

use serde_json::Value;

use crate::common::cli::{self, KEY, Run};
use crate::common::git::TempRepo;

/// `redline config show ARGS…` with `XDG_CONFIG_HOME` at `config_home` and `env` set.
async fn show(config_home: &Path, env: &[(&str, &str)], args: &[&str]) -> Run {
    let mut command = cli::redline_command();
    command
        .args(["config", "show"])
        .args(args)
        .env("XDG_CONFIG_HOME", config_home);
    for (name, value) in env {
        command.env(name, value);
    }
    let output = command.output().await.expect("run redline");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        events: String::new(),
    }
}

/// A repository whose `main` commits `config` as `.redline.toml`; returns it and the commit.
fn repo_with_config(config: &str) -> (TempRepo, String) {
    let repo = TempRepo::new();
    repo.write("src/lib.rs", "pub fn f() {}\n");
    repo.write(".redline.toml", config);
    let commit = repo.commit("base");
    (repo, commit)
}

fn user_home(text: &str) -> tempfile::TempDir {
    let home = tempfile::tempdir().expect("tmp");
    std::fs::create_dir_all(home.path().join("redline")).expect("dir");
    std::fs::write(home.path().join("redline/config.toml"), text).expect("user config");
    home
}

/// The `# origin` of `key` in the text output.
fn origin_of<'a>(stdout: &'a str, key: &str) -> &'a str {
    let line = stdout
        .lines()
        .find(|l| l.starts_with(&format!("{key} = ")))
        .unwrap_or_else(|| panic!("no `{key}` in\n{stdout}"));
    line.rsplit_once("  # ")
        .map(|(_, origin)| origin)
        .unwrap_or_else(|| panic!("no origin on `{line}`"))
}

fn value_of<'a>(stdout: &'a str, key: &str) -> &'a str {
    let line = stdout
        .lines()
        .find(|l| l.starts_with(&format!("{key} = ")))
        .unwrap_or_else(|| panic!("no `{key}` in\n{stdout}"));
    let rest = &line[key.len() + 3..];
    rest.split_once("  # ").map_or(rest, |(v, _)| v).trim_end()
}

#[tokio::test]
async fn each_value_names_its_origin_flag_env_base_file_and_line_user_file_default() {
    let (repo, base) = repo_with_config(
        "# team settings\nstrategy = \"react\"\nmax_steps = 7\nbase_url = \"http://attacker.invalid/v1\"\ninline_at = \"nit\"\n[reflection]\ntarget = 9.0\n",
    );
    let home = user_home("# mine\n\nparallel = 6\nmodel = \"user-model\"\n");
    let repo_arg = repo.path().display().to_string();
    let run = show(
        home.path(),
        &[("REDLINE_MODEL", "env-model"), ("REDLINE_API_KEY", KEY)],
        &[
            "--origin",
            "--repo",
            &repo_arg,
            "--base",
            "main",
            "--max-steps",
            "12",
            "--no-verify",
        ],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out = &run.stdout;
    assert_eq!(value_of(out, "verify"), "false");
    assert_eq!(origin_of(out, "verify"), "flag --no-verify");
    assert_eq!(value_of(out, "verify_model"), "\"env-model\"");
    assert_eq!(value_of(out, "inline_at"), "\"nit\"");
    assert_eq!(
        origin_of(out, "inline_at"),
        format!(".redline.toml:5 (base {})", &base[..7])
    );
    assert_eq!(value_of(out, "max_steps"), "12");
    assert_eq!(origin_of(out, "max_steps"), "flag --max-steps");
    assert_eq!(value_of(out, "model"), "\"env-model\"");
    assert_eq!(origin_of(out, "model"), "env REDLINE_MODEL");
    assert_eq!(value_of(out, "strategy"), "\"react\"");
    assert_eq!(
        origin_of(out, "strategy"),
        format!(".redline.toml:2 (base {})", &base[..7])
    );
    assert_eq!(
        origin_of(out, "reflection.target"),
        format!(".redline.toml:7 (base {})", &base[..7])
    );
    assert_eq!(value_of(out, "parallel"), "6");
    let user_file = home.path().join("redline/config.toml");
    assert_eq!(
        origin_of(out, "parallel"),
        format!("{}:3", user_file.display())
    );
    assert_eq!(value_of(out, "tool_mode"), "\"auto\"");
    assert_eq!(origin_of(out, "tool_mode"), "default");
    assert_eq!(value_of(out, "reflection.max_rounds"), "3");
    assert_eq!(origin_of(out, "reflection.max_rounds"), "default");
    // A repository's file cannot choose where the key goes: its base_url is not used.
    assert_eq!(value_of(out, "base_url"), "\"https://api.openai.com/v1\"");
    assert_eq!(origin_of(out, "base_url"), "default");
    assert!(run.stderr.contains("base_url"), "{}", run.stderr);
    assert_eq!(value_of(out, "api_key"), "\"set\"");
    assert_eq!(origin_of(out, "api_key"), "env REDLINE_API_KEY");
    run.assert_no_key();
}

#[tokio::test]
async fn a_flag_given_on_the_command_line_is_told_from_its_variable() {
    let (repo, _) = repo_with_config("model = \"repo-model\"\n");
    let home = tempfile::tempdir().expect("tmp");
    let repo_arg = repo.path().display().to_string();
    let run = show(
        home.path(),
        &[
            ("REDLINE_MODEL", "env-model"),
            ("REDLINE_MAX_TOKENS", "50000"),
        ],
        &[
            "--origin",
            "--repo",
            &repo_arg,
            "--base",
            "main",
            "--model",
            "flag-model",
        ],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(value_of(&run.stdout, "model"), "\"flag-model\"");
    assert_eq!(origin_of(&run.stdout, "model"), "flag --model");
    assert_eq!(
        origin_of(&run.stdout, "max_tokens"),
        "env REDLINE_MAX_TOKENS"
    );
    // Without any flag or variable, the repository's file decides.
    let run = show(
        home.path(),
        &[],
        &["--origin", "--repo", &repo_arg, "--base", "main"],
    )
    .await;
    assert!(
        origin_of(&run.stdout, "model").starts_with(".redline.toml:1 (base "),
        "{}",
        run.stdout
    );
}

#[tokio::test]
async fn without_a_key_it_still_shows_and_says_the_key_is_not_set() {
    let (repo, _) = repo_with_config("max_steps = 5\n");
    let home = tempfile::tempdir().expect("tmp");
    let repo_arg = repo.path().display().to_string();
    let run = show(
        home.path(),
        &[],
        &[
            "--repo", &repo_arg, "--base", "main", "--format", "json", "--origin",
        ],
    )
    .await;
    let json = run.success_json();
    assert_eq!(json["api_key"]["value"], "not set");
    assert!(
        json["api_key"]["origin"]
            .as_str()
            .is_some_and(|o| o.contains("OPENAI_API_KEY")),
        "{json}"
    );
    assert_eq!(json["max_steps"]["value"], 5);
    assert_eq!(json["fail_on"]["value"], "never");
    assert_eq!(json["fail_on"]["origin"], "default");
    assert_eq!(json["temperature"]["value"], Value::Null);
    // Without --origin, values only.
    let run = show(
        home.path(),
        &[("OPENAI_API_KEY", KEY)],
        &["--repo", &repo_arg, "--base", "main", "--format", "json"],
    )
    .await;
    let json = run.success_json();
    assert_eq!(json["api_key"]["value"], "set");
    assert!(json["max_steps"].get("origin").is_none(), "{json}");
    run.assert_no_key();
}

#[tokio::test]
async fn the_work_tree_and_a_given_file_are_named_as_origins() {
    let (repo, _) = repo_with_config("max_steps = 5\n");
    repo.write(".redline.toml", "# edited\nmax_steps = 9\n");
    let home = tempfile::tempdir().expect("tmp");
    let repo_arg = repo.path().display().to_string();
    let run = show(
        home.path(),
        &[],
        &[
            "--origin",
            "--repo",
            &repo_arg,
            "--base",
            "main",
            "--uncommitted",
        ],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(value_of(&run.stdout, "max_steps"), "9");
    assert_eq!(
        origin_of(&run.stdout, "max_steps"),
        ".redline.toml:2 (work tree)"
    );
    let other = home.path().join("other.toml");
    std::fs::write(&other, "\n\nmax_steps = 11\n").expect("write");
    let run = show(
        home.path(),
        &[],
        &[
            "--origin",
            "--repo",
            &repo_arg,
            "--base",
            "main",
            "--config",
            &other.display().to_string(),
        ],
    )
    .await;
    assert_eq!(value_of(&run.stdout, "max_steps"), "11");
    assert_eq!(
        origin_of(&run.stdout, "max_steps"),
        format!("{}:3", other.display())
    );
}

#[tokio::test]
async fn a_bad_value_is_an_error_naming_the_key_and_its_origin() {
    let (repo, _) = repo_with_config("strategy = \"fastest\"\n");
    let home = tempfile::tempdir().expect("tmp");
    let run = show(
        home.path(),
        &[],
        &[
            "--repo",
            &repo.path().display().to_string(),
            "--base",
            "main",
        ],
    )
    .await;
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(run.stderr.contains("strategy"), "{}", run.stderr);
}

#[tokio::test]
async fn config_schema_prints_the_committed_schema() {
    let output = cli::redline_command()
        .args(["config", "schema"])
        .output()
        .await
        .expect("run redline");
    assert_eq!(output.status.code(), Some(0));
    let committed = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/redline.schema.json"
    ));
    assert_eq!(String::from_utf8_lossy(&output.stdout), committed);
}

/// A `base_url` with a password and credential query parameters (the user's file may
/// hold one: a proxy's login, an Azure-style `?api-key=`).
const SECRET_BASE_URL: &str =
    "https://proxy-user:hunter2@llm.example.invalid/v1?api-key=k3y-s3cret&deployment=d1&sig=s1gn3d";

/// What must never be printed of [`SECRET_BASE_URL`].
const BASE_URL_SECRETS: [&str; 3] = ["hunter2", "k3y-s3cret", "s1gn3d"];

#[tokio::test]
async fn base_url_credentials_are_masked_in_text_origin_and_json() {
    let (repo, _) = repo_with_config("max_steps = 5\n");
    let home = user_home(&format!("base_url = \"{SECRET_BASE_URL}\"\n"));
    let repo_arg = repo.path().display().to_string();
    let common = ["--repo", repo_arg.as_str(), "--base", "main"];
    for extra in [
        &[][..],
        &["--origin"][..],
        &["--format", "json"][..],
        &["--format", "json", "--origin"][..],
    ] {
        let args: Vec<&str> = common.iter().chain(extra).copied().collect();
        let run = show(home.path(), &[], &args).await;
        assert_eq!(run.code, 0, "{extra:?}: {}", run.stderr);
        for secret in BASE_URL_SECRETS {
            assert!(
                !run.stdout.contains(secret) && !run.stderr.contains(secret),
                "{extra:?} shows {secret}:\n{}",
                run.stdout
            );
        }
        // What is not a credential is shown: the user can still tell which endpoint.
        assert!(
            run.stdout.contains("llm.example.invalid/v1") && run.stdout.contains("deployment=d1"),
            "{extra:?}:\n{}",
            run.stdout
        );
    }
    // The same rule on the flag, and in an error naming the value.
    let run = show(
        home.path(),
        &[],
        &[
            "--repo",
            &repo_arg,
            "--base",
            "main",
            "--base-url",
            "http://u:hunter2@[::1/?token=k3y-s3cret",
        ],
    )
    .await;
    assert_ne!(run.code, 0, "{}", run.stdout);
    assert!(run.stderr.contains("is not a URL"), "{}", run.stderr);
    for secret in BASE_URL_SECRETS {
        assert!(!run.stderr.contains(secret), "{}", run.stderr);
    }
}
