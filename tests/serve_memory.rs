//! Memory of the real `redline serve` binary under a burst of large uploads that are not
//! signed with the webhook secret, read from `/proc/PID/status` (Linux only).
#![cfg(target_os = "linux")]

use std::time::Duration;

use bytes::Bytes;
use redline::llm::Secret;
use redline::server::signature::sign;

use crate::common::github_mock::GitHubMock;
use crate::common::model_server::{ModelServer, Wire};
use crate::common::wait_until;
use crate::serve_cli::Server;

const MIB: u64 = 1024 * 1024;
/// The budget of unverified bytes the server runs with in this test.
const BUDGET_MIB: u64 = 48;
const UPLOADS: usize = 20;
const UPLOAD_BYTES: usize = 24 * 1024 * 1024;
/// Growth of the peak resident set allowed on top of the budget: hyper's per-connection read
/// buffers (at most ~400 KB each, 20 connections: 8 MiB), the pieces in flight between the
/// socket and the body buffer, and allocator slack.
const OVERHEAD_MIB: u64 = 32;
/// How far above its pre-burst size the resident set may stay once the burst is over.
const SETTLED_MIB: u64 = 16;

/// `VmRSS` and `VmHWM` of `pid`, in bytes.
fn memory_of(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| {
                rest.trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<u64>()
                    .ok()
            })
            .map(|kib| kib * 1024)
            .unwrap_or_else(|| panic!("{name} in {status}"))
    };
    (field("VmRSS:"), field("VmHWM:"))
}

#[tokio::test]
async fn a_burst_of_unsigned_uploads_stays_within_the_unverified_budget() {
    let gh = GitHubMock::start().await;
    let model = ModelServer::start(Wire::OpenAi, vec![]).await;
    let budget = format!("{BUDGET_MIB}MiB");
    let server = Server::start_with(&gh, &model, &["--max-unverified-bytes", &budget]).await;
    let pid = server.child.id().expect("pid");
    let ping = br#"{"zen":"Anything added dilutes everything else.","hook_id":3}"#;
    let (status, answer) = server.deliver_signed("ping", "warm-up", ping).await;
    assert_eq!(status, 200, "{answer}");
    let (before, _) = memory_of(pid);

    let body = Bytes::from(vec![b' '; UPLOAD_BYTES]);
    let wrong = sign(&Secret::new("not the webhook secret"), &body);
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let uploads = (0..UPLOADS).map(|index| {
        let request = client
            .post(format!("{}/webhook", server.url))
            .header("X-GitHub-Event", "pull_request")
            .header("X-GitHub-Delivery", format!("burst-{index}"))
            .header("X-Hub-Signature-256", wrong.clone())
            .timeout(Duration::from_secs(120))
            .body(body.clone());
        async move { request.send().await.map(|r| r.status().as_u16()) }
    });
    let outcomes = futures::future::join_all(uploads).await;
    let (_, peak) = memory_of(pid);

    let refused = outcomes.iter().filter(|o| matches!(o, Ok(401))).count();
    let busy = outcomes.iter().filter(|o| matches!(o, Ok(503))).count();
    // A 503 is sent without reading the body, so the client may see the reset instead.
    let reset = outcomes.iter().filter(|o| o.is_err()).count();
    assert_eq!(refused + busy + reset, UPLOADS, "{outcomes:?}");
    assert!(refused > 0, "bodies were read and refused: {outcomes:?}");
    let growth = peak.saturating_sub(before);
    eprintln!(
        "burst: {refused} x 401, {busy} x 503, {reset} reset; RSS before {} MiB, peak {} MiB (+{} MiB)",
        before / MIB,
        peak / MIB,
        growth / MIB
    );
    assert!(
        growth <= (BUDGET_MIB + OVERHEAD_MIB) * MIB,
        "peak RSS grew by {} MiB (budget {BUDGET_MIB} MiB + {OVERHEAD_MIB} MiB overhead)",
        growth / MIB
    );

    let settled = || memory_of(pid).0 <= before + SETTLED_MIB * MIB;
    wait_until(settled).await;
    let (after, _) = memory_of(pid);
    eprintln!("burst: RSS after {} MiB", after / MIB);
    assert!(
        after <= before + SETTLED_MIB * MIB,
        "RSS stayed {} MiB above its size before the burst",
        after.saturating_sub(before) / MIB
    );

    let (status, answer) = server.deliver_signed("ping", "after-burst", ping).await;
    assert_eq!(
        status, 200,
        "a signed delivery is accepted after the burst: {answer}"
    );
    assert!(answer.contains("pong"), "{answer}");
}
