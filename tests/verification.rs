//! The verification stage end to end, with a scripted verifier: a fabricated finding is
//! dropped (with its reason in `dropped`) in every entry point and posted nowhere; an
//! unreadable or misbehaving verifier drops nothing and marks the findings unverified;
//! `--no-verify`, the Action's `verify: false` and a repository's `verify = false` send no
//! verifier request; limits hold with a verifier that never answers; a finding reported by
//! two plan tasks is posted once; nits are verified like any finding and not inline; a
//! transcript replays the verification offline and a resume does not repeat it.

mod duplicates_and_nits;
mod entry_points;
mod eval;
mod robustness;
mod support;
mod switches;
mod transcripts;
