//! `redline context`: stage 1 of context shaping without any model — what the
//! model would see first, and its size.

use anyhow::{Context, bail};

use super::{ContextArgs, EXIT_ERROR, EXIT_OK, error_message};
use crate::config::FileConfig;
use crate::context::{ShapeOptions, shape_change, stage1_budget};
use crate::llm::tokens::{ModelLimits, TokenCounter};

/// Runs `redline context` and returns the exit code.
pub fn run(args: ContextArgs) -> i32 {
    match context(&args) {
        Ok(text) => {
            print!("{text}");
            EXIT_OK
        }
        Err(error) => {
            eprintln!("error: {}", error_message(&error));
            EXIT_ERROR
        }
    }
}

fn context(args: &ContextArgs) -> anyhow::Result<String> {
    let start = match &args.repo {
        Some(path) => path.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let root = crate::repo::discover(&start)?;
    let file = FileConfig::load_worktree(&root)?;
    let model = args
        .model
        .clone()
        .or(file.model.clone())
        .unwrap_or_else(|| "gpt-4o".to_string());
    let range = crate::repo::resolve_range(&root, args.base.as_deref(), &args.head)?;
    let (view, changes) = crate::repo::load_change(&root, &range, false)?;
    let counter = TokenCounter::for_model(&model);
    let budget = stage1_budget(ModelLimits::for_model(&model));
    let options = ShapeOptions {
        budget_tokens: budget,
        exclude: file.exclude.clone(),
        ..ShapeOptions::default()
    };
    let head_text = |path: &str| view.read_text(path).ok();
    let shaped = shape_change(&changes, &head_text, &options, &counter);
    Ok(match args.format.as_str() {
        "json" => format!(
            "{}\n",
            shaped.to_json(&model, counter.encoding().name(), budget)
        ),
        "text" if args.show => format!(
            "{}\n--- the first message, as the model would see it ---\n{}",
            shaped.render_text(),
            shaped.message
        ),
        "text" => shaped.render_text(),
        other => {
            bail!("--format: unknown format `{other}` (expected text or json)");
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repo::opened;
    use crate::repo::test_repo::repo_with_changed_files;

    #[test]
    fn shaping_opens_the_repository_a_bounded_number_of_times_not_once_per_file() {
        let (dir, base, head) = repo_with_changed_files(40);
        let args = ContextArgs {
            repo: Some(dir.path().to_path_buf()),
            base: Some(base),
            head,
            model: Some("gpt-4o".into()),
            format: "json".into(),
            show: false,
        };
        let before = opened::on_this_thread();
        let output = context(&args).unwrap();
        let opened = opened::on_this_thread() - before;
        // Every changed file's head text was read (each is shown with its content).
        assert!(output.contains("src/f39.rs"), "{output}");
        // Range + change (whose handle the view reuses); 3 per file before the fix.
        assert!(
            opened <= 2,
            "opened the repository {opened} times for 40 files"
        );
    }
}
