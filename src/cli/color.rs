//! `--color auto|always|never`: whether text output carries ANSI colour.
//!
//! `auto` colours a stream that is a terminal, unless `NO_COLOR` is set (`CLICOLOR=0` and
//! `CLICOLOR_FORCE` are honoured as anstream reads them); `always` and `never` say so
//! whatever the stream and the environment.

use anstream::stream::RawStream;
use anstream::{AutoStream, ColorChoice};

/// When to colour text output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorWhen {
    /// On a terminal, unless NO_COLOR is set.
    #[default]
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

impl ColorWhen {
    /// Whether text written to `stream` is coloured.
    pub(crate) fn for_stream<S: RawStream>(self, stream: &S) -> bool {
        match self {
            ColorWhen::Always => true,
            ColorWhen::Never => false,
            ColorWhen::Auto => AutoStream::choice(stream) != ColorChoice::Never,
        }
    }
}
