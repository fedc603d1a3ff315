//! One pull-request flow for `redline action` and `redline serve`: one `/redline`
//! grammar answered the same way, and the same review for the same pull request.

mod commands;
mod commits;
mod same_review;
