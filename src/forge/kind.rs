//! [`ForgeKind`]: which forge a change request, a webhook delivery or a queued job belongs to.
//!
//! A leaf: it depends on nothing else in the crate, so the queue can store it without
//! depending on either forge's client. The names ([`ForgeKind::as_str`]) are stored in the
//! database and used in JSON; they never change.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A forge Redline reviews on.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum ForgeKind {
    /// GitHub pull requests (the App or the Action). Rows stored before forges were told
    /// apart are GitHub's, hence the default.
    #[default]
    GitHub,
    /// GitLab merge requests.
    GitLab,
}

impl ForgeKind {
    /// Every forge, in a stable order.
    pub const ALL: [ForgeKind; 2] = [ForgeKind::GitHub, ForgeKind::GitLab];

    /// The stored name: `github` or `gitlab`.
    pub fn as_str(self) -> &'static str {
        match self {
            ForgeKind::GitHub => "github",
            ForgeKind::GitLab => "gitlab",
        }
    }
}

impl fmt::Display for ForgeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not a forge's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown forge {0:?}")]
pub struct UnknownForge(pub String);

impl FromStr for ForgeKind {
    type Err = UnknownForge;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ForgeKind::ALL
            .into_iter()
            .find(|forge| forge.as_str() == s)
            .ok_or_else(|| UnknownForge(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_text_and_json() {
        for forge in ForgeKind::ALL {
            assert_eq!(forge.as_str().parse::<ForgeKind>(), Ok(forge));
            let json = serde_json::to_value(forge).unwrap_or_default();
            assert_eq!(json, serde_json::Value::from(forge.as_str()));
            assert_eq!(serde_json::from_value::<ForgeKind>(json).ok(), Some(forge));
        }
        assert_eq!(ForgeKind::GitLab.to_string(), "gitlab");
        assert!("GitHub".parse::<ForgeKind>().is_err());
    }
}
