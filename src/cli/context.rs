//! `redline context`: stage 1 of context shaping without any model — what the
//! model would see first, and its size.
//!
//! The settings are resolved as `redline review` resolves them (flags, the user's file,
//! the repository's file at the base revision, defaults; no key needed), and the message
//! is shaped by the engine's own stage-1 function, so what this prints is what a review
//! of the same change with the same settings starts from.

use anyhow::{Context, bail};

use super::review::{ConfigChoice, repository_config, settings_in_scope};
use super::{ContextArgs, EXIT_ERROR, EXIT_OK, error_message};
use crate::agent::shape_first_message;
use crate::config::ModelFlags;
use crate::config::settings::{Scope, SettingFlags};
use crate::context::stage1_budget;
use crate::llm::tokens::TokenCounter;
use crate::tools::Workspace;

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
    if !matches!(args.format.as_str(), "text" | "json") {
        bail!(
            "--format: unknown format `{}` (expected text or json)",
            args.format
        );
    }
    let start = match &args.repo {
        Some(path) => path.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let root = crate::repo::discover(&start)?;
    let range = crate::repo::resolve_range(&root, args.base.as_deref(), &args.head)?;
    let choice = ConfigChoice {
        config: args.config.as_deref(),
        uncommitted: args.uncommitted,
        quiet: true,
    };
    let repository = repository_config(&root, &choice, &range.base)?;
    let flags = SettingFlags {
        model: ModelFlags {
            model: args.model.clone(),
            ..ModelFlags::default()
        },
        ..SettingFlags::default()
    };
    let mut settings = settings_in_scope(flags, "flag", repository, Scope::Offline)?;
    let intent = super::intent::local_intent(&args.intent, &root, &range)?;
    settings.agent.set_intent(&intent);
    let (view, mut changes) = crate::repo::load_change(&root, &range, args.uncommitted)?;
    settings.include.apply(&mut changes);
    let workspace = Workspace::new(view, changes);
    let agent = &settings.agent;
    let counter = TokenCounter::for_model(&agent.model);
    let shaped = shape_first_message(&workspace, agent, &counter);
    let budget = stage1_budget(agent.limits);
    let intent_tokens = counter.count(&agent.intent);
    let intent_line = format!(
        "intent: {intent_tokens} tokens (intent_budget {})\n",
        agent.intent_budget
    );
    Ok(match (args.format.as_str(), args.show) {
        ("json", _) => {
            let mut value = shaped.to_json(&agent.model, counter.encoding().name(), budget);
            if let Some(object) = value.as_object_mut() {
                object.insert(
                    "intent".into(),
                    serde_json::json!({
                        "text": agent.intent,
                        "tokens": intent_tokens,
                        "budget": agent.intent_budget,
                    }),
                );
            }
            format!("{value}\n")
        }
        (_, true) => format!(
            "{}{intent_line}\n--- what the author says the change does, as the model would see it ---\n{}\n\n--- the first message, as the model would see it ---\n{}",
            shaped.render_text(),
            agent.intent,
            shaped.message
        ),
        _ => format!("{}{intent_line}", shaped.render_text()),
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
            uncommitted: false,
            config: None,
            intent: Default::default(),
        };
        let before = opened::on_this_thread();
        let output = context(&args).unwrap();
        let opened = opened::on_this_thread() - before;
        // Every changed file's head text was read (each is shown with its content).
        assert!(output.contains("src/f39.rs"), "{output}");
        // Range + commit messages + change (whose handle the view reuses); 3 per file
        // before the fix.
        assert!(
            opened <= 3,
            "opened the repository {opened} times for 40 files"
        );
    }
}
