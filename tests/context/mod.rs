//! Tests of the context stages: shaping the change, pruning observations, summarising.

mod packing;
mod prune;
mod shape;
mod summarize;
mod support;
mod text_diff;
