//! The one rule for showing a URL: every place Redline prints a URL (`config show` in
//! text, with `--origin` and as JSON, `check`, error messages, the model client's
//! transport errors that reach logs and events) shows it through [`masked`] (or
//! [`mask_all`] for a text that may hold URLs).
//!
//! Invariant: a shown URL never holds a password, a user name standing alone (it may be
//! a token), the value of a query parameter whose name looks like a credential (see
//! [`CREDENTIAL_NAMES`]) or a fragment; a text that is not a URL shows only its
//! scheme-like prefix. A URL with none of these is shown exactly as written.

/// Parts of a query parameter's name that mark its value as a credential
/// (compared in lowercase): `password`, `sslpassword`, `token`, `api_key`, `secret`, `sig`…
const CREDENTIAL_NAMES: [&str; 10] = [
    "pass",
    "pwd",
    "token",
    "key",
    "secret",
    "auth",
    "sig",
    "credential",
    "session",
    "cookie",
];

fn is_credential_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    CREDENTIAL_NAMES.iter().any(|part| lower.contains(part))
}

/// A URL for display: its password (or a user name standing alone, which may be a
/// token) and the value of every credential-looking query parameter replaced by `***`.
pub(crate) fn masked(text: &str) -> String {
    let Ok(mut url) = url::Url::parse(text) else {
        // Not a URL: show only the scheme-like prefix, it may hold anything.
        return text.split(':').next().unwrap_or_default().to_string() + ":…";
    };
    let secret = url.password().is_some()
        || !url.username().is_empty()
        || url.query_pairs().any(|(name, _)| is_credential_name(&name))
        || url.fragment().is_some();
    if !secret {
        // Nothing to hide: shown as written (not as the parser normalises it).
        return text.to_string();
    }
    if url.password().is_some() {
        let _ = url.set_password(Some("***"));
    } else if !url.username().is_empty() {
        let _ = url.set_username("***");
    }
    if url.query().is_some() {
        let pairs: Vec<(String, String)> = url
            .query_pairs()
            .map(|(name, value)| {
                let value = if is_credential_name(&name) {
                    "***".to_string()
                } else {
                    value.into_owned()
                };
                (name.into_owned(), value)
            })
            .collect();
        url.query_pairs_mut().clear().extend_pairs(pairs);
    }
    if url.fragment().is_some() {
        url.set_fragment(Some("…"));
    }
    url.to_string()
}

/// `text` with every URL in it (`scheme://…`, up to a space, quote or bracket) masked.
pub(crate) fn mask_all(text: &str) -> String {
    static URL: std::sync::LazyLock<Option<regex::Regex>> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r#"[A-Za-z][A-Za-z0-9+.\-]*://[^\s"'`<>()\[\]{}]+"#).ok()
    });
    match URL.as_ref() {
        Some(pattern) => pattern
            .replace_all(text, |found: &regex::Captures<'_>| {
                // Punctuation after a URL (`https://api.github.com, or`, `…/api/v3: GET`)
                // ends the sentence, not the URL.
                let url = found[0].trim_end_matches([',', '.', ';', ':', '!', '?']);
                format!("{}{}", masked(url), &found[0][url.len()..])
            })
            .into_owned(),
        // The pattern is a constant; without it, no line may show a URL at all.
        None => "(output hidden: URLs could not be masked)".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_hidden_in_urls() {
        assert_eq!(
            masked("postgres://app:hunter2@db:5432/redline"),
            "postgres://app:***@db:5432/redline"
        );
        assert_eq!(masked("sqlite://redline.db"), "sqlite://redline.db");
        assert!(!masked("postgres//app:hunter2@x").contains("hunter2"));
        assert_eq!(
            masked("https://ghp_token1234@example.com/v1"),
            "https://***@example.com/v1"
        );
    }

    #[test]
    fn credential_query_parameters_are_hidden_on_every_line() {
        let url = "postgres://app@db/redline?password=hunter2&sslpassword=s3cret&application_name=r&api_key=k1&Token=t1&sslmode=require";
        let shown = masked(url);
        assert_eq!(
            shown,
            "postgres://***@db/redline?password=***&sslpassword=***&application_name=r&api_key=***&Token=***&sslmode=require"
        );
        let line = format!(
            "FAIL  database: REDLINE_DATABASE_URL {url}: error connecting to {url} (pool timed out); fix: x"
        );
        let masked = mask_all(&line);
        for secret in ["hunter2", "s3cret", "k1", "t1"] {
            assert!(!masked.contains(secret), "{masked}");
        }
        assert!(masked.contains("(pool timed out); fix: x"), "{masked}");
        assert_eq!(mask_all("no url here"), "no url here");
        // Punctuation after a URL is the sentence's: the URL is shown whole and unchanged.
        assert_eq!(
            mask_all("the API root (https://api.github.com, or https://HOST/api/v3 on GHES)"),
            "the API root (https://api.github.com, or https://HOST/api/v3 on GHES)"
        );
        assert_eq!(
            mask_all("at http://localhost:3000: GET /app failed"),
            "at http://localhost:3000: GET /app failed"
        );
    }
}
