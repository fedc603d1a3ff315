//! Credentials go to the configured host only: a mirror fetch that the remote redirects to
//! another origin stops with an error naming that origin, and the other origin never sees
//! the token (nor serves the pack).

use axum::http::{StatusCode, Uri, header};
use axum::response::Response;
use redline::flow::checkout::mirror;
use redline::llm::Secret;

use crate::common::git::TempRepo;
use crate::common::git_http::GitHttpServer;

const TOKEN: &str = "glpat-zq9x7w-kv4m8p-abcdefghijkl";

/// A server on another port that answers every request with a redirect to `target`
/// (the same path and query, on the other origin).
async fn redirect_to(target: String) -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("address");
    let app = axum::Router::new().fallback(move |uri: Uri| {
        let target = target.clone();
        async move {
            let path = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
            Response::builder()
                .status(StatusCode::FOUND)
                .header(header::LOCATION, format!("{target}{path}"))
                .body(axum::body::Body::empty())
                .expect("response")
        }
    });
    let task = tokio::spawn(async move {
        axum::serve(listener, app).await.expect("redirect server");
    });
    (format!("http://{addr}"), task)
}

#[tokio::test]
async fn a_mirror_fetch_redirected_to_another_origin_stops_and_keeps_the_token() {
    let repo = TempRepo::new();
    repo.write("a.txt", "1\n");
    let head = repo.commit("one");
    let parent = repo.path().parent().expect("parent");
    let name = repo
        .path()
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    // The other origin serves the repository to anyone: following would fetch from it.
    let other = GitHttpServer::serve(parent, None).await;
    let other_origin = other.url("").trim_end_matches('/').to_string();
    let (origin, task) = redirect_to(other_origin.clone()).await;
    let cache = tempfile::tempdir().expect("tmp");
    let path = cache.path().join("m.git");
    let url = format!("{origin}/{name}");
    let fetched = tokio::task::spawn_blocking(move || {
        mirror(&path, &url, &[head.as_str()], Some(&Secret::new(TOKEN)))
    })
    .await
    .expect("join");
    task.abort();
    let error = fetched
        .expect_err("the fetch must stop at the redirect")
        .to_string();
    assert!(
        error.contains("redirected to another origin") && error.contains(&other_origin),
        "{error}"
    );
    assert!(!error.contains(TOKEN), "{error}");
    let requests = other.requests();
    assert!(
        requests.iter().all(|r| r.authorization.is_none()),
        "{requests:?}"
    );
    assert!(
        requests.is_empty(),
        "nothing is fetched from elsewhere: {requests:?}"
    );
}
