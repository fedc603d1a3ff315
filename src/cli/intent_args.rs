//! The intent flags of a local change (`redline review`, `redline context`) as the local
//! flow's [`IntentSources`]: `--title`, `--description-file` (`-` for standard input), or
//! an eval case's description text.

use super::IntentArgs;
use crate::flow::local::{Description, IntentSources};

impl From<&IntentArgs> for IntentSources {
    fn from(args: &IntentArgs) -> Self {
        let description = match &args.description_file {
            None => args.description.clone().map(Description::Text),
            Some(_) if args.reads_stdin() => Some(Description::Stdin),
            Some(path) => Some(Description::File(path.clone())),
        };
        IntentSources {
            title: args.title.clone(),
            description,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn each_description_flag_names_its_source() {
        let args = |file: Option<&str>, text: Option<&str>| IntentArgs {
            title: Some("Fix the ratio".into()),
            description_file: file.map(PathBuf::from),
            description: text.map(str::to_string),
        };
        let sources = IntentSources::from(&args(Some("-"), None));
        assert_eq!(sources.title.as_deref(), Some("Fix the ratio"));
        assert_eq!(sources.description, Some(Description::Stdin));
        assert!(sources.reads_stdin());
        let sources = IntentSources::from(&args(Some("notes.md"), None));
        assert_eq!(
            sources.description,
            Some(Description::File(PathBuf::from("notes.md")))
        );
        assert!(!sources.reads_stdin());
        let sources = IntentSources::from(&args(None, Some("Why it changes")));
        assert_eq!(
            sources.description,
            Some(Description::Text("Why it changes".into()))
        );
        assert_eq!(
            IntentSources::from(&IntentArgs::default()),
            IntentSources::default()
        );
    }
}
