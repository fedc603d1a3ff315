//! The orchestrator that runs a review, its strategies and its events.

pub mod events;
pub mod text_mode;
