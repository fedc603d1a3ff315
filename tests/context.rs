//! Tests of the context stages: shaping the change, pruning observations, summarising.

mod packing;
mod prune;
mod shape;
mod summarize;
mod support;
mod task_sections;
mod text_diff;
