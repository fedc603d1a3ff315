//! The `/redline review [--strategy NAME]` comment command.

/// The word that starts every command.
const PREFIX: &str = "/redline";
/// Longest accepted strategy name.
const MAX_STRATEGY_LEN: usize = 64;

/// A command found in a comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Review the pull request now, optionally with a named strategy.
    Review {
        /// `--strategy NAME`.
        strategy: Option<String>,
    },
}

/// Reads the command at the start of a comment body. `Ok(None)` when the body is not a
/// `/redline review` command; `Err` with a reason when it is one but malformed.
pub fn parse_command(body: &str) -> Result<Option<Command>, String> {
    let first_line = body.trim_start().lines().next().unwrap_or("");
    let mut words = first_line.split_whitespace();
    if words.next() != Some(PREFIX) || words.next() != Some("review") {
        return Ok(None);
    }
    let mut strategy = None;
    while let Some(word) = words.next() {
        let value = match word.strip_prefix("--strategy") {
            Some("") => words.next(),
            Some(rest) => rest.strip_prefix('='),
            None => return Err(format!("unknown argument {:?}", shorten(word))),
        };
        let name = value.ok_or("--strategy needs a name")?;
        if strategy.is_some() {
            return Err("--strategy given twice".to_string());
        }
        strategy = Some(valid_strategy(name)?);
    }
    Ok(Some(Command::Review { strategy }))
}

fn valid_strategy(name: &str) -> Result<String, String> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    if name.is_empty() || name.len() > MAX_STRATEGY_LEN || !name.chars().all(allowed) {
        return Err(format!("invalid strategy name {:?}", shorten(name)));
    }
    Ok(name.to_string())
}

/// At most 40 characters of user text, for error messages.
fn shorten(text: &str) -> String {
    text.chars().take(40).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn review(strategy: Option<&str>) -> Result<Option<Command>, String> {
        Ok(Some(Command::Review {
            strategy: strategy.map(str::to_string),
        }))
    }

    #[test]
    fn plain_review() {
        assert_eq!(parse_command("/redline review"), review(None));
        assert_eq!(
            parse_command("  \n/redline   review  \nthanks!"),
            review(None)
        );
    }

    #[test]
    fn strategy_in_both_spellings() {
        assert_eq!(
            parse_command("/redline review --strategy deep"),
            review(Some("deep"))
        );
        assert_eq!(
            parse_command("/redline review --strategy=fast-1"),
            review(Some("fast-1"))
        );
    }

    #[test]
    fn other_text_is_not_a_command() {
        for body in [
            "",
            "LGTM",
            "please /redline review",
            "/redline",
            "/redline reviewer",
            "/redline help",
            "/redlinereview",
        ] {
            assert_eq!(parse_command(body), Ok(None), "{body:?}");
        }
    }

    #[test]
    fn malformed_commands_are_errors() {
        for body in [
            "/redline review --strategy",
            "/redline review --strategy=",
            "/redline review --strategy a;rm",
            "/redline review --strategy a --strategy b",
            "/redline review --force",
        ] {
            assert!(parse_command(body).is_err(), "{body:?}");
        }
    }
}
