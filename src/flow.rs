//! The review flows, one per kind of request, each taking a typed request and calling the
//! engine:
//! - [`local`]: a change in a local repository (`redline review`, `eval`, `context`, `replay`);
//! - [`pull`]: a pull request or merge request (`redline action`, `gitlab`, `serve`);
//! - [`thread`]: an answer in a review thread of a pull request;
//!
//! and [`checkout`], getting the commits a review of a pull or merge request needs into a
//! local repository (the Action's and the GitLab job's clone, the server's mirrors).
//!
//! Invariants: a request is plain data (no command-line parser type: the command line
//! converts its arguments once into one); the same request resolves to the same settings,
//! change and model requests whichever entry point made it.
//! Layering: used by `cli` and `server`; uses `agent`, `config`, `forge` (publishing and
//! thread answers on any forge), `github` (GitHub's review threads),
//! `guidelines`, `intent`, `repo`, `review` and `tools`; never `cli` or `server`.

pub mod checkout;
pub mod local;
pub mod pull;
pub mod thread;
