//! Tests of the context stages: shaping the change, pruning observations, summarising.

mod prune;
mod shape;
mod summarize;
mod text_diff;
