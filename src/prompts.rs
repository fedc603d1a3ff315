//! Prompts, compiled in from `prompts/*.md` and overridable from the config file.
